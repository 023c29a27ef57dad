"""Errors caused by user input.  The command line prints them without a
traceback; every message names the file (and line or key) and the problem."""


class KgparserError(Exception):
    """Base class of every error a user can fix (bad file, config, option)."""
