"""The version of kgparser (as pyproject.toml gives it), written into
checkpoints and shown by ``kgparser --version``."""
__version__ = "0.1.0"
