"""kgparser's folder in the user's cache: ``$XDG_CACHE_HOME/kgparser``, else
``~/.cache/kgparser``; what is kept there can always be made again (encoder
fingerprints, :mod:`kgparser.model.fingerprint`; encoders converted from the
packages that ship them, :mod:`kgparser.model.packaged_encoder`)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_folder(name: str) -> Path:
    """The folder ``name`` of kgparser's cache (not made here)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kgparser" / name
