"""The one exception the command line turns into a one-line message."""


class LocklabError(Exception):
    """A problem the user can fix: bad input, a missing engine, an unknown experiment.

    The command line prints it as ``locklab: error: <message>`` and exits with ``exit_code``,
    never with a traceback. ``details``: lines quoted under it, indented (a compiler's further
    errors), where one line cannot hold what the user needs to see.
    """

    def __init__(self, message: str, exit_code: int = 2, details: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.details = details
