"""locklab: a laboratory for lock algorithms.

The native engine (``locklab-bench``) measures; this package will drive experiments, store
results, compute statistics and write reports.
"""

__version__ = "0.1.0"
