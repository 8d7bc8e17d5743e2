"""The one exception the command line turns into a one-line message."""


class LocklabError(Exception):
    """A problem the user can fix: bad input, a missing engine, an unknown experiment.

    The command line prints it as ``locklab: error: <message>`` and exits with ``exit_code``,
    never with a traceback.
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
