"""A packaged model's card: the wheel's ``README.md`` and long description.

It says what the model is and where it comes from: the treebank it was
trained on (the config's ``data.train``) and that treebank's licence, whose
files (``LICENSE*``, ``LICENCE*``, ``COPYING*`` in the treebank's folder) the
wheel carries; the test scores the run recorded in ``metrics.jsonl`` (its
final line: on the words of the test file, with the tags as they were read,
and from raw text where the run learned a tokenizer); the parse speed
measured when it was packaged; its encoder; the recipe (the run's config);
the kgparser versions that trained and packaged it.  Torch-free.
"""
from __future__ import annotations

import json
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import KgparserError

#: the names of licence files in a treebank's folder
LICENCE_FILE = re.compile(r"^(LICEN[CS]E|COPYING)([._-].*)?$", re.IGNORECASE)
#: how the card names each score of ``metrics.jsonl`` (``test_NAME``, ``test_raw_NAME``)
SCORE_NAMES = {"tokens": "Tokens", "sentences": "Sentences", "words": "Words", "uas": "UAS", "las": "LAS",
               "upos": "UPOS", "xpos": "XPOS", "feats": "UFeats", "lemma": "Lemmas"}
#: the tag columns a run's test scores report when the model predicts them
TAG_SCORES = ("upos", "xpos", "feats", "lemma")


class CardError(KgparserError):
    """What the card must say cannot be found (a licence, the run's metrics)."""


@dataclass(frozen=True)
class Treebank:
    """The training file, its folder's licence files and the licence's name."""

    train: Path
    licence_files: list[Path]
    licence: str
    #: where the name comes from (a README's ``License:`` line, the licence text's first line)
    licence_source: str


@dataclass(frozen=True)
class Speed:
    """Words parsed in ``seconds`` (the test file's, on one thread), or why it was not measured (``missing``)."""

    words: int = 0
    seconds: float = 0.0
    sentences: int = 0
    missing: str = ""

    def text(self) -> str:
        """The speed and how it was measured, in a sentence."""
        if self.missing:
            return f"not measured: {self.missing}"
        rate = self.words / self.seconds if self.seconds else 0.0
        return (f"{rate:,.0f} words/s: the {self.words:,} words ({self.sentences:,} sentences) of the run's test "
                f"file, words given, tags as in the test scores, parsed on one CPU thread in batches of 64 "
                f"({self.seconds:.2f} s, loading excluded) when the model was packaged, on {_machine()}")


@dataclass(frozen=True)
class Card:
    """Everything the card says (:meth:`text` writes it)."""

    name: str
    version: str
    wheel: str
    checkpoint: dict[str, Any]
    config: dict[str, Any]
    treebank: Treebank
    scores: dict[str, Any] | None
    speed: Speed
    encoder: dict[str, Any] | None
    packaged_with: str

    def summary(self) -> str:
        """One line: the wheel's description."""
        system = self.config["system"]["name"]
        las = f", test LAS {100 * self.scores['test_las']:.2f}" if self.scores and "test_las" in self.scores else ""
        return f"kgparser dependency parser ({system}) trained on {self.treebank.train.parent.name}{las}"

    def text(self) -> str:
        """The card in Markdown."""
        return "\n".join([f"# {self.name} {self.version}", "", f"{self.summary()}.", "",
                          *self._use(), *self._treebank(), *self._scores(), "## Speed", "", self.speed.text() + ".",
                          "", *self._encoder(), *self._recipe(), *self._versions()])

    def _use(self) -> list[str]:
        """How to install and load the model."""
        return ["## Use", "", "```sh", f"pip install {self.wheel}",
                f"kgparser parse input.conllu --model {self.name}", "```", "", "```python",
                "from kgparser import Parser", "", f'parser = Parser.load("{self.name}")',
                'parser.parse([["The", "dog", "barks", "."]])', "```", "",
                f'In spaCy: `nlp.add_pipe("kgparser", config={{"model": "{self.name}"}})`.', ""]

    def _treebank(self) -> list[str]:
        """The training file, its treebank and the treebank's licence."""
        data = self.config["data"]
        files = ", ".join(f"`{path.name}`" for path in self.treebank.licence_files)
        return ["## Treebank and licence", "", f"Trained on `{self.treebank.train.name}` of the treebank "
                 f"`{self.treebank.train.parent.name}`" + (f" (language `{data['lang']}`)" if data.get("lang") else "")
                 + f"; best dev epoch {self.checkpoint.get('epoch')}.", "",
                 f"The treebank's licence: **{self.treebank.licence}** (as {self.treebank.licence_source} "
                 f"names it); a model trained on the treebank may be bound by its terms. Its text ({files}, copied "
                 f"unchanged from the treebank's folder) is in the wheel's `.dist-info/licenses/`.", ""]

    def _scores(self) -> list[str]:
        """The run's final test scores: on the words given and from raw text."""
        if self.scores is None:
            return ["## Test scores", "", "None recorded (the run's `metrics.jsonl` has no final test line: "
                    "it had no `data.test`).", ""]
        test = Path(str(self.config["data"]["test"])).name
        lines = ["## Test scores", "", f"As the run recorded them in its `metrics.jsonl` (best epoch "
                 f"{self.scores.get('best_epoch')}), on `{test}`.", "", f"Words given, {self._tags()}:", "",
                 *_table("words given", self.scores, "test_")]
        if any(key.startswith("test_raw_") for key in self.scores):
            lines += ["", "From raw text: the model's own tokenizer, sentence splitter and multiword tokens, tags "
                      "predicted (F1 over the words aligned by characters, as CoNLL 2018 scores):", "",
                      *_table("raw text", self.scores, "test_raw_")]
        return lines + [""]

    def _tags(self) -> str:
        """Which tags the scores on given words were parsed with."""
        predicted = [SCORE_NAMES[c] for c in TAG_SCORES if f"test_{c}" in (self.scores or {})]
        if predicted:
            return (f"without gold tags: the test file's {', '.join(predicted)} removed and predicted by the "
                    f"model, as users' text comes")
        model = self.config["model"]
        if model.get("tag_input") == "none" or not model.get("pos_dim"):
            return "the model reads no tags"
        return f"with the test file's gold tags ({str(model.get('pos')).upper()})"

    def _encoder(self) -> list[str]:
        """Where the encoder comes from (a package, converted on first load), if there is one."""
        if self.encoder is None:
            return ["## Encoder", "", "None: the checkpoint is the whole model.", ""]
        half = ", float16 weights" if self.encoder.get("float16") else ""
        return ["## Encoder", "", f"multilingual-e5-small converted from the `{self.encoder['package']}` package "
                f"{self.encoder['version']} (`{self.encoder['model_file']}`{half}), a dependency of this package "
                f"rather than part of it: converted once into kgparser's cache "
                f"(`~/.cache/kgparser/encoders/`) on first load and checked against the fingerprint the "
                f"checkpoint stores (`{self.encoder['fingerprint'][:16]}...`).", ""]

    def _recipe(self) -> list[str]:
        """The run's config."""
        return ["## Recipe", "", "The run's config (`kgparser train` with it trains the model again):", "",
                "```yaml", yaml.safe_dump(self.config, sort_keys=False).rstrip(), "```", ""]

    def _versions(self) -> list[str]:
        """The kgparser versions that trained and packaged the model."""
        trained = self.checkpoint.get("kgparser_version", "unknown")
        return ["## Versions", "", f"Trained with kgparser {trained}, packaged with kgparser {self.packaged_with}.",
                ""]


def _table(row: str, scores: dict[str, Any], prefix: str) -> list[str]:
    """A Markdown table of the scores named ``prefix + NAME`` (fractions, shown as
    percentages), in the order of :data:`SCORE_NAMES`, as one row ``row``."""
    names = [name for name in SCORE_NAMES if prefix + name in scores]
    return ["| test | " + " | ".join(SCORE_NAMES[name] for name in names) + " |", "|---|" + "---:|" * len(names),
            f"| {row} | " + " | ".join(f"{100 * float(scores[prefix + name]):.2f}" for name in names) + " |"]


def _machine() -> str:
    """The machine's architecture and processor, as Python names them."""
    return f"{platform.machine() or 'an unknown machine'} ({platform.processor() or platform.system()})"


def treebank_of(train: str | None) -> Treebank:
    """The training file's treebank: the licence files of its folder and the
    licence's name (a UD README's ``License:`` line, else the first line of the
    licence's text); a folder without one is one line of error."""
    if not train:
        raise CardError("the run's config has no data.train, so the model card cannot name its treebank")
    path = Path(train)
    folder = path.parent
    files = sorted(entry for entry in folder.iterdir() if LICENCE_FILE.match(entry.name) and entry.is_file()) \
        if folder.is_dir() else []
    if not files:
        raise CardError(f"data.train: {train}: its folder {folder} has no LICENSE file; a packaged model carries "
                        f"its treebank's licence: put the licence there (UD treebanks have LICENSE.txt)")
    return Treebank(path, files, *_licence_name(folder, files[0]))


def _licence_name(folder: Path, licence: Path) -> tuple[str, str]:
    """The licence's name and where it was read (see :func:`treebank_of`)."""
    for readme in sorted(folder.glob("README*")):
        found = re.search(r"^License:[ \t]*(\S.*?)\s*$", readme.read_text(encoding="utf-8", errors="replace"), re.M)
        if found:
            return found[1], f"the `License:` line of the treebank's `{readme.name}`"
    lines = licence.read_text(encoding="utf-8", errors="replace").splitlines()
    return next((line.strip() for line in lines if line.strip()), licence.name), f"the first line of `{licence.name}`"


def final_scores(metrics: Path) -> dict[str, Any] | None:
    """The last ``"final": true`` line of a run's ``metrics.jsonl`` (its test
    scores), None where there is none (no file, no test data)."""
    if not metrics.is_file():
        return None
    final = None
    for number, line in enumerate(metrics.read_text(encoding="utf-8").splitlines(), 1):
        try:
            record = json.loads(line) if line.strip() else {}
        except ValueError:
            raise CardError(f"{metrics}:{number}: not a JSON line") from None
        if isinstance(record, dict) and record.get("final"):
            final = record
    return final
