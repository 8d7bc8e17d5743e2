"""locklab: a laboratory for lock algorithms.

The native engine (``locklab-bench``) measures; this package drives experiments (``locklab``:
sweeps, campaigns), keeps every run in a SQLite store, computes the statistics and prints the
tables.
"""

__version__ = "0.1.0"
