"""Parsing with a trained model, beside :mod:`kgparser.training`.

:mod:`~kgparser.inference.parser` (the :class:`Parser` API, also ``kgparser.Parser``),
:mod:`~kgparser.inference.decode` (greedy batched decoding),
:mod:`~kgparser.inference.tags` (which tags are read, predicted and written),
:mod:`~kgparser.inference.decoding_constraints` (span and arc constraints for the decoder),
:mod:`~kgparser.inference.tree_repair` (a final state into a valid UD tree) and
:mod:`~kgparser.io.plaintext` (pre-tokenized text as input).
"""
