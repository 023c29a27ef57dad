"""Sub-commands of ``kgparser`` (see :mod:`kgparser.cli`)."""
