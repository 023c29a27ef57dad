"""kgparser: greedy transition-based dependency parsing with BiLSTM features.

The transition systems (:mod:`kgparser.transitions`) are importable without
torch; :class:`Parser` (loaded lazily) needs it.
"""
from .version import __version__

__all__ = ["Parser", "__version__"]


def __getattr__(name):
    if name == "Parser":
        from .inference.parser import Parser

        return Parser
    raise AttributeError(f"module 'kgparser' has no attribute {name!r}")
