"""Deprecated: raw text is :mod:`kgparser.io.rawtext` (the reader, the MISC
spacing, :func:`text_of`) and :mod:`kgparser.tokenize.rules` (spaCy's rules);
this name, which earlier READMEs showed, still gives their public names."""
import warnings

from .io.rawtext import RawReader, RawTextError, Word, build_sentences, escape, text_of, unescape  # noqa: F401
from .tokenize.rules import model_language, raw_sentences  # noqa: F401

warnings.warn("kgparser.rawtext is now kgparser.io.rawtext and kgparser.tokenize.rules", DeprecationWarning,
              stacklevel=2)
