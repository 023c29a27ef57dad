"""Parsing with a trained model, above :mod:`kgparser.training`: the one front
door :mod:`~kgparser.inference.parser` (the :class:`Parser` API, also
``kgparser.Parser``); the parse sequence :mod:`~kgparser.inference.parsing`
and what it runs: :mod:`~kgparser.inference.tags` (which tags are read,
predicted and written), :mod:`~kgparser.inference.decoding_constraints`
(span and arc constraints for the decoder), :mod:`~kgparser.inference.decode`
(greedy batched decoding) and :mod:`~kgparser.inference.tree_repair` (a final
state into a valid UD tree); corpus parsing, :mod:`~kgparser.inference.corpus`
with its worker processes :mod:`~kgparser.inference.workers`, which run a
parse function handed down to them; the checks of the options
(:mod:`~kgparser.inference.options`) and the spaCy component
(:mod:`~kgparser.inference.spacy_component`).  Nothing here but the
component imports :class:`Parser`.
"""
