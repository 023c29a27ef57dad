"""Deprecated: pictures of trees are :mod:`kgparser.io.render`; this name,
which earlier READMEs showed, still gives its public names."""
import warnings

from .io.render import *  # noqa: F401,F403

warnings.warn("kgparser.render is now kgparser.io.render", DeprecationWarning, stacklevel=2)
