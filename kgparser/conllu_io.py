"""Deprecated: the CoNLL-U reader and writer are :mod:`kgparser.io.conllu`;
this name, which earlier READMEs showed, still gives its public names."""
import warnings

from .io.conllu import *  # noqa: F401,F403
from .io.conllu import __all__  # noqa: F401

warnings.warn("kgparser.conllu_io is now kgparser.io.conllu", DeprecationWarning, stacklevel=2)
