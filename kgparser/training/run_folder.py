"""A training run's folder: what ``kgparser train`` writes into ``output_dir``,
the marker that says it wrote it, and what a new run may do to a folder.

``kgparser train`` writes its marker ``.kgparser-run`` before any other file
of a run (under the folder's lock, :func:`kgparser.io.locking.training_lock`).
The run's own files are :data:`RUN_FILES`; they are kgparser's only where the
marker is (or, in a folder of a kgparser too old to write the marker, where
``best.pt`` or ``last.pt`` is a kgparser checkpoint).  So:

* a folder holding anything but the lock, without the marker, is refused,
  unless ``--overwrite``, which then trains beside those files as long as
  none of them has the name of a run file;
* a folder holding a model (``best.pt``, ``last.pt``) is refused unless
  ``--resume`` or ``--overwrite``;
* a new run in a marked folder first removes the previous run's files,
  ``last.pt`` first, and writes nothing before they are gone: a folder is
  never a mix of two runs, and a removal cut short leaves no ``last.pt``;
* ``--resume`` continues from ``last.pt``; where a marked (or empty) folder
  has none (the run was stopped before its first epoch ended, or while
  ``--overwrite`` removed the old files), it trains from the start, so a run
  killed at any moment continues with ``--resume``;
* the config file being trained from is never written over.

Nothing here imports torch (the experiment runner marks the folders of its runs).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import KgparserError
from ..io.atomic import same_file, write_text
from ..io.locking import TRAIN_LOCK

MARKER = ".kgparser-run"
CONFIG_FILE, METRICS_FILE, TENSORBOARD_DIR = "config.yaml", "metrics.jsonl", "tensorboard"
BEST, LAST = "best.pt", "last.pt"
#: a run's files, in the order a new run removes them: ``last.pt`` first, so
#: that a folder whose removal was cut short is never resumed
RUN_FILES = (LAST, BEST, METRICS_FILE, CONFIG_FILE, TENSORBOARD_DIR)
_MARKER_TEXT = (f"kgparser train writes its run here: {', '.join(RUN_FILES)}. A new run in this folder "
                f"(--overwrite) removes those and nothing else.\n")


class RunFolderError(KgparserError):
    """A run cannot start in this folder (someone else's files, a model, the config)."""


@dataclass(frozen=True)
class Start:
    """How a run starts in its folder: from ``last.pt`` (``resume``) or anew
    (after ``clear``-ing the previous run's files), and whether it writes
    ``config.yaml`` (not where that is the config being read)."""

    resume: bool
    clear: bool
    write_config: bool = True
    note: str | None = None


def plan_start(out: Path, *, resume: bool, overwrite: bool, config_file: str | Path | None = None) -> Start:
    """How a run may start in the existing folder ``out`` (nothing is written);
    a :class:`RunFolderError` in one line when it may not."""
    reads_config = config_file is not None and same_file(config_file, out / CONFIG_FILE)
    if reads_config and not resume:
        raise RunFolderError(f"output_dir: {out}: the config being trained from, {config_file}, is the run's "
                             f"{CONFIG_FILE}, which every new run writes, --overwrite included; copy it elsewhere "
                             f"or choose another output_dir")
    ours = is_run_folder(out)
    if resume:
        return _resumed(out, ours, write_config=not reads_config)
    models = [name for name in (BEST, LAST) if (out / name).exists()]
    if models and not overwrite:
        raise RunFolderError(f"output_dir: {out} already holds a trained model ({', '.join(models)}); "
                             f"continue it with --resume, replace it with --overwrite, or choose another output_dir")
    if not ours:
        _check_foreign(out, overwrite)
    return Start(resume=False, clear=ours)


def _resumed(out: Path, ours: bool, write_config: bool) -> Start:
    if (out / LAST).exists():
        return Start(resume=True, clear=False, write_config=write_config)
    if ours or not _other_names(out):
        return Start(resume=False, clear=ours, write_config=write_config,
                     note=f"note: {out} holds no complete {LAST} (the run was stopped before it wrote one): "
                          f"training from the start")
    raise RunFolderError(f"{out / LAST}: no such checkpoint, and {out} is not a kgparser run folder "
                         f"(no {MARKER}); nothing to resume")


def _check_foreign(out: Path, overwrite: bool) -> None:
    """Refuse a folder holding files kgparser did not write; with ``overwrite``,
    only those that a run would write over."""
    others = _other_names(out)
    clashing = [name for name in RUN_FILES if name in others]
    if overwrite and clashing:
        raise RunFolderError(f"output_dir: {out}: {', '.join(clashing)} not written by kgparser train "
                             f"(no {MARKER} marker), so --overwrite does not replace them; move them away "
                             f"or choose another output_dir")
    if others and not overwrite:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise RunFolderError(f"output_dir: {out} holds files kgparser did not write ({shown}); choose a new "
                             f"or empty output_dir, or train beside them with --overwrite (which never "
                             f"removes files kgparser did not write)")


def _other_names(out: Path) -> list[str]:
    """The names in ``out`` other than the lock, the marker and temporary files."""
    return sorted(entry.name for entry in out.iterdir()
                  if entry.name not in (TRAIN_LOCK, MARKER) and not _is_temporary(entry.name))


def _is_temporary(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")


def is_run_folder(out: Path) -> bool:
    """Whether ``kgparser train`` wrote the run in ``out``: the marker, or (a
    run of a kgparser before the marker) a kgparser checkpoint."""
    return (out / MARKER).exists() or any(_is_checkpoint(out / name) for name in (LAST, BEST))


def _is_checkpoint(path: Path) -> bool:
    if not path.is_file():
        return False
    import torch

    from ..model.checkpoint import CHECKPOINT_FORMAT

    try:  # mapped, not read: a look at one key of a file that may be large
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # torch raises many types for files that are not its own
        return False
    return isinstance(data, dict) and data.get("format") == CHECKPOINT_FORMAT


def begin(out: Path, start: Start, log) -> None:
    """Make ``out`` the folder of this run: the previous run's files removed
    (``start.clear``), then the marker written."""
    if start.note:
        log(start.note)
    if start.clear:
        removed = clear_run(out, keep=() if start.write_config else (CONFIG_FILE,))
        if removed:
            log(f"removed the previous run's files from {out}: {', '.join(removed)}")
    mark_run_folder(out)


def mark_run_folder(out: Path) -> None:
    """Write the marker that says kgparser writes runs into ``out``."""
    if not (out / MARKER).exists():
        write_text(out / MARKER, _MARKER_TEXT)


def clear_run(out: Path, keep: tuple[str, ...] = ()) -> list[str]:
    """Remove the run files of ``out`` (``last.pt`` first; not those named in
    ``keep``) and TensorBoard's event files, never anything else; returns the
    names of what was removed."""
    removed = []
    for name in (name for name in RUN_FILES if name not in keep):
        path = out / name
        if path.is_dir():
            if _remove_events(path):
                removed.append(f"{name}/")
        elif path.exists() or path.is_symlink():
            path.unlink()
            removed.append(name)
    return removed


def _remove_events(folder: Path) -> bool:
    """Remove TensorBoard's event files under ``folder``, then the folders they
    leave empty; whether anything was removed."""
    events = list(folder.rglob("events.out.tfevents.*"))
    for path in events:
        path.unlink()
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True) + [folder]:
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    return bool(events)
