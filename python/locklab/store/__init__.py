"""The results store: one SQLite file, ``locklab.db``, holding experiments and their runs (see
db.py); every layer reads and writes its runs through it."""

from locklab.store.db import DB_NAME, Experiment, Run, Store

__all__ = ["DB_NAME", "Experiment", "Run", "Store"]
