"""Sub-commands of ``kgparser`` (see :mod:`kgparser.cli`), one module each; a module whose name starts with
``_`` is a helper of one of them (``_wheel`` and ``_model_card`` build ``kgparser package``'s wheel)."""
