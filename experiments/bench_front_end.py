"""What the raw-text front end costs a whole parse (issue 48): ``kgparser
parse`` as a user runs it, whole process, one thread, on the same text three
ways, taking turns, medians of ``--rounds`` rounds:

* ``learned``: the running text (:func:`kgparser.io.rawtext.text_of` of the
  gold files, one paragraph per ``# newpar``), ``--input-format raw``, the
  model's own tokenizer;
* ``rules``: the same text, ``--input-format raw --tokenizer rules`` (spaCy's
  rule tokenizer and sentencizer);
* ``gold words``: the gold files' words, every column but FORM, MISC and the
  comments blanked (what the parser reads when there is no front end).

    python experiments/bench_front_end.py --model MODEL.pt GOLD.conllu ... [--rounds 3] [--core 1]

Prints a Markdown table: wall seconds, peak RSS, words/s, and what the front
end adds to the gold-word parse and to the rules.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kgparser.io.atomic import write_text
from kgparser.io.conllu import read_conllu
from kgparser.io.rawtext import text_of

BLANKED = (2, 3, 4, 5, 6, 7, 8)  # LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS


def blanked(path: str) -> str:
    """The file's CoNLL-U with every column but ID, FORM and MISC blanked."""
    lines = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) == 10:
            cols = [("_" if i in BLANKED else c) for i, c in enumerate(cols)]
        lines.append("\t".join(cols))
    return "\n".join(lines) + "\n"


def timed(command: list[str], core: int | None) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (MB) and standard error of ``command``."""
    prefix = ["taskset", "-c", str(core)] if core is not None and shutil.which("taskset") else []
    done = subprocess.run(prefix + ["/usr/bin/time", "-f", "TIME %e %M"] + command, capture_output=True,
                          text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    last = [line for line in done.stderr.splitlines() if line.startswith("TIME ")][-1].split()
    return float(last[1]), int(last[2]) // 1024, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gold", nargs="+", help="gold CoNLL-U files (their text and words)")
    parser.add_argument("--model", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--core", type=int, default=None, help="pin each run to this core (taskset)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="front_end_"))
    text = "\n\n".join(text_of(read_conllu(path)).strip() for path in args.gold) + "\n"
    write_text(folder / "text.txt", text)
    write_text(folder / "words.conllu", "".join(blanked(path) for path in args.gold))
    words = sum(s.n for path in args.gold for s in read_conllu(path))
    kgparser = [sys.executable, "-m", "kgparser.cli", "parse", "-m", args.model, "--threads", "1", "-q",
                "-o", str(folder / "out.conllu")]
    setups = {"learned": ["--input-format", "raw", str(folder / "text.txt")],
              "rules": ["--input-format", "raw", "--tokenizer", "rules", str(folder / "text.txt")],
              "gold words": [str(folder / "words.conllu")]}
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in setups}
    for _ in range(args.rounds):
        for name, rest in setups.items():
            seconds, peak, _ = timed(kgparser + rest, args.core)
            runs[name].append((seconds, peak))
    wall = {name: statistics.median(s for s, _ in values) for name, values in runs.items()}
    print(f"{len(text):,} characters, {words:,} gold words; medians of {args.rounds} rounds, taking turns\n")
    print("| input | wall s (runs) | peak RSS MB | gold words/s | vs gold words | vs rules |")
    print("|---|---|---|---|---|---|")
    for name, values in runs.items():
        print(f"| {name} | {wall[name]:.2f} ({', '.join(f'{s:.2f}' for s, _ in values)}) | "
              f"{max(p for _, p in values)} | {words / wall[name]:,.0f} | "
              f"{100 * (wall[name] / wall['gold words'] - 1):+.1f}% | {100 * (wall[name] / wall['rules'] - 1):+.1f}% |")
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
