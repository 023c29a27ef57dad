"""Errors caused by user input.  The command line prints them without a
traceback; every message names the file (and line or key) and the problem.
Also :class:`Terminated`, how a signal that asks the process to end reaches
the code that was running."""


class KgparserError(Exception):
    """Base class of every error a user can fix (bad file, config, option)."""


class Terminated(BaseException):
    """The process was asked to end (SIGTERM, SIGHUP): raised wherever it was,
    as Ctrl-C raises KeyboardInterrupt, so that what it leaves half-done
    (temporary files, worker processes) is cleaned up on the way out."""

    def __init__(self, number: int):
        super().__init__(f"ended by signal {number}")
        self.number = number
