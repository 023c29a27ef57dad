"""Outputs of one kgparser checkout, to compare two checkouts byte for byte
(issue 47: a restructuring must not change a byte of output).

    python experiments/same_output.py TREE MODEL OUT [--treebanks DIR] [--train CONFIG]

For each UD treebank's test file under ``--treebanks`` (default
``../shared/ud``), the checkout at ``TREE`` parses it with ``MODEL`` as
CoNLL-U, as pre-tokenized text (its forms, one sentence per line), as raw
text (the text rebuilt from it, tokenized for its language, ``xx`` where
spaCy has no tokenizer) and as CoNLL-U with ``--processes 2``, into
``OUT/NAME.{conllu,text,raw,p2}.conllu``; with ``--train``, it also trains
that config for one epoch into ``OUT/train`` (``metrics.jsonl`` without its
times, and the weights of ``last.pt``, are what must agree).  Each command
runs from a scratch folder with ``PYTHONPATH=TREE``, so it imports that
checkout's package whatever is installed.  Compare two such folders with
``diff -r``; the per-command seconds are in ``OUT/seconds.tsv``.
"""
from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kgparser.io.atomic import write_text
from kgparser.io.conllu import read_conllu
from kgparser.io.rawtext import text_of

#: spaCy's code for each treebank's language (xx: spaCy has no tokenizer for it)
LANGUAGES = {"Afrikaans": "af", "Armenian": "hy", "Czech": "cs", "English": "en", "Gothic": "xx", "Greek": "el",
             "Hungarian": "hu", "Indonesian": "id", "Korean": "xx", "Latin": "la", "Lithuanian": "lt",
             "Old_Church_Slavonic": "xx", "Turkish": "tr", "Vietnamese": "xx", "Wolof": "xx"}


def main() -> None:
    args = _arguments()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    inputs = out / "inputs"
    inputs.mkdir(exist_ok=True)
    times = []
    for test in sorted(glob.glob(str(Path(args.treebanks).resolve() / "UD_*" / "*test.conllu"))):
        name = Path(test).parent.name[3:]
        text, raw = _texts(Path(test), inputs / name)
        lang = LANGUAGES[name.split("-")[0]]
        for kind, source, options in (("conllu", test, []), ("text", text, ["--input-format", "text"]),
                                      ("raw", raw, ["--input-format", "raw", "--lang", lang]),
                                      ("p2", test, ["--processes", "2"])):
            target = out / f"{name}.{kind}.conllu"
            times.append((f"{name}.{kind}", _run(args.tree, ["parse", "-m", str(Path(args.model).resolve()),
                                                             str(source), "-o", str(target), *options])))
    if args.train:
        times.append(("train", _run(args.tree, ["train", str(Path(args.train).resolve()), "--set",
                                                "training.epochs=1", "--set", f"output_dir={out / 'train'}",
                                                "--overwrite"])))
        _comparable_metrics(out / "train")
    write_text(out / "seconds.tsv", "".join(f"{what}\t{seconds:.2f}\n" for what, seconds in times))


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", help="the kgparser checkout (the folder holding kgparser/)")
    parser.add_argument("model", help="a checkpoint to parse with")
    parser.add_argument("out", help="the folder to write the outputs into")
    parser.add_argument("--treebanks", default="../shared/ud")
    parser.add_argument("--train", default=None, metavar="CONFIG", help="also train CONFIG for one epoch")
    return parser.parse_args()


def _texts(test: Path, stem: Path) -> tuple[Path, Path]:
    """The test file's forms (one sentence per line) and its rebuilt raw text, made once."""
    text, raw = stem.with_suffix(".tok.txt"), stem.with_suffix(".raw.txt")
    if not text.exists():
        sentences = read_conllu(test)
        write_text(text, "".join(" ".join(sentence.forms) + "\n" for sentence in sentences))
        write_text(raw, text_of(sentences))
    return text, raw


def _run(tree: str, arguments: list[str]) -> float:
    """Seconds ``kgparser ARGUMENTS`` took, run from the checkout ``tree``."""
    environment = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([sys.executable, "-m", "kgparser.cli", *arguments], cwd=scratch, env=environment,
                       check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def _comparable_metrics(run: Path) -> None:
    """``metrics.jsonl`` without the fields that are times, and the weights of
    ``last.pt``, as ``metrics.nontime.jsonl`` and ``weights.txt``."""
    import json

    import torch

    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    kept = [{key: value for key, value in line.items() if "second" not in key and "per_s" not in key
             and "time" not in key} for line in lines]
    write_text(run / "metrics.nontime.jsonl", "".join(json.dumps(line, sort_keys=True) + "\n" for line in kept))
    weights = torch.load(run / "last.pt", weights_only=True)["model"]["weights"]
    write_text(run / "weights.txt", "".join(f"{key} {tensor.double().sum().item()!r} "
                                             f"{tensor.double().abs().sum().item()!r}\n"
                                             for key, tensor in sorted(weights.items())))


if __name__ == "__main__":
    main()
