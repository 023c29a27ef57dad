"""Scoring parses: word by word against gold words (:mod:`~kgparser.evaluation.scores`),
aligned by characters as the CoNLL 2018 shared task scores raw text
(:mod:`~kgparser.evaluation.aligned`), and how much of a treebank a
transition system can build (:mod:`~kgparser.evaluation.coverage`).
Nothing here imports torch.
"""
