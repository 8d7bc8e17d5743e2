"""The command line: ``locklab COMMAND``, one module per command group (see main.py)."""

from locklab.cli.main import main

__all__ = ["main"]
