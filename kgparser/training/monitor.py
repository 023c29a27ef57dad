"""Watching a training run: TensorBoard event files and a JSON-lines metrics
file (one record per epoch); the progress bar on stderr is the one progress
line (:mod:`kgparser.io.progress`)."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import KgparserError
from ..io.atomic import write_text


class MetricsFile:
    """JSON lines, one record per epoch (and a final one with test scores; before
    them, one per epoch of the tokenizer's training, ``tokenizer_epoch``, and after
    them one per epoch of the lemmatizer's, ``lemmatizer_epoch``); on resume,
    records after the resumed epoch and final records are dropped.

    The file is small (one line per epoch), so each write replaces it whole
    through :func:`kgparser.io.atomic.write_text`: a kill leaves the previous
    version, never a line cut short.  Such a line, left by a kgparser before
    this one, is dropped on resume with a warning (through ``log``); a damaged
    line elsewhere is an error naming the file and line."""

    def __init__(self, path: str | Path, keep_up_to_epoch: int | None = None, log=print):
        self.path = Path(path)
        self.records: list[dict] = []
        if keep_up_to_epoch is not None and self.path.exists():
            self.records = [record for record in self._read(log) if "tokenizer_epoch" in record
                            or "lemmatizer_epoch" in record
                            or record.get("epoch", keep_up_to_epoch + 1) <= keep_up_to_epoch]
        self._save()

    def _read(self, log) -> list[dict]:
        lines = self.path.read_text(encoding="utf-8").split("\n")
        records = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                if any(rest.strip() for rest in lines[number:]):
                    raise KgparserError(f"{self.path}, line {number}: not a JSON record") from None
                log(f"warning: {self.path}, line {number}: dropped a record cut short "
                    f"(the run was stopped while writing it)")
        return records

    def write(self, record: dict) -> None:
        self.records.append(record)
        self._save()

    def _save(self) -> None:
        write_text(self.path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in self.records))


class TensorBoard:
    """Scalars per epoch and the run's hyper-parameters; a no-op when disabled."""

    def __init__(self, log_dir: str | Path, enabled: bool = True):
        self.writer = None
        if enabled:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(log_dir))

    def scalars(self, values: dict, step: int) -> None:
        if self.writer is None:
            return
        for name, value in values.items():
            if value is not None:
                self.writer.add_scalar(name, value, step)
        self.writer.flush()

    def hparams(self, hparams: dict, metrics: dict) -> None:
        if self.writer is None:
            return
        clean = {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in hparams.items()}
        self.writer.add_hparams(clean, {k: v for k, v in metrics.items() if v is not None}, run_name="hparams")
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def flatten(tree: dict, prefix: str = "") -> dict:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat
