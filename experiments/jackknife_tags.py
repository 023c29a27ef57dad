"""Jackknifed training tags for a pipeline parser (the usual remedy for a parser
trained on gold tags and run on predicted ones; e.g. Che et al. 2012, UDPipe).

    python experiments/jackknife_tags.py split TRAIN K WORK     # WORK/fold{k}.train.conllu and
                                                                 # WORK/fold{k}.heldout.conllu (tags blanked)
    python experiments/jackknife_tags.py merge GOLD PRED OUT    # GOLD with PRED's UPOS, XPOS, FEATS
    python experiments/jackknife_tags.py untag GOLD OUT         # GOLD with UPOS, XPOS, FEATS blanked

``split`` deals the sentences round-robin into K folds; ``fold{k}.train`` is
every other fold, ``fold{k}.heldout`` fold k with its UPOS, XPOS and FEATS set
to ``_``.  ``merge`` keeps GOLD's words and trees and takes the tag columns
from PRED (the same sentences in the same order, as ``kgparser parse`` writes
them); GOLD may be several files, PRED then holds their predictions in turn.
See ``experiments/jackknife_tags.sh`` for the whole experiment.
"""
from __future__ import annotations

import sys
from pathlib import Path

TAG_COLUMNS = (3, 4, 5)  # UPOS, XPOS, FEATS


def blocks(path: str) -> list[list[str]]:
    """The sentences of a CoNLL-U file, each as its lines (comments included)."""
    text = Path(path).read_text(encoding="utf-8")
    return [block.split("\n") for block in text.strip("\n").split("\n\n") if block.strip()]


def write(path: Path, sentences: list[list[str]]) -> None:
    """Write whole (to a temporary name first, so no half-written file is left)."""
    partial = path.with_suffix(path.suffix + ".partial")
    try:
        partial.write_text("".join("\n".join(lines) + "\n\n" for lines in sentences), encoding="utf-8")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def with_tags(lines: list[str], tags: list[list[str]] | None) -> list[str]:
    """A sentence's lines with its word lines' tag columns replaced: by ``tags``
    (one list of three values per word line) or, without them, by ``_``."""
    out, word = [], 0
    for line in lines:
        columns = line.split("\t")
        if len(columns) == 10 and columns[0].isdigit():
            for column, value in zip(TAG_COLUMNS, tags[word] if tags else ("_",) * 3):
                columns[column] = value
            word += 1
            line = "\t".join(columns)
        out.append(line)
    return out


def word_tags(lines: list[str]) -> list[list[str]]:
    """The tag columns of a sentence's word lines."""
    return [[columns[c] for c in TAG_COLUMNS] for columns in (line.split("\t") for line in lines)
            if len(columns) == 10 and columns[0].isdigit()]


def split(train: str, k: int, work: str) -> None:
    sentences = blocks(train)
    out = Path(work)
    out.mkdir(parents=True, exist_ok=True)
    for fold in range(k):
        write(out / f"fold{fold}.train.conllu", [s for i, s in enumerate(sentences) if i % k != fold])
        heldout = [with_tags(s, None) for i, s in enumerate(sentences) if i % k == fold]
        write(out / f"fold{fold}.heldout.conllu", heldout)


def merge(gold: list[str], pred: str, out: str) -> None:
    gold_sentences = [s for path in gold for s in blocks(path)]
    predicted = blocks(pred)
    if len(gold_sentences) != len(predicted):
        sys.exit(f"{pred}: {len(predicted)} sentences, {', '.join(gold)}: {len(gold_sentences)}")
    merged = []
    for number, (g, p) in enumerate(zip(gold_sentences, predicted), 1):
        tags = word_tags(p)
        if len(tags) != len(word_tags(g)):
            sys.exit(f"{pred}: sentence {number} has {len(tags)} words, the gold one {len(word_tags(g))}")
        merged.append(with_tags(g, tags))
    write(Path(out), merged)


def untag(gold: str, out: str) -> None:
    write(Path(out), [with_tags(s, None) for s in blocks(gold)])


def main(argv: list[str]) -> None:
    if len(argv) == 4 and argv[0] == "split":
        split(argv[1], int(argv[2]), argv[3])
    elif len(argv) == 3 and argv[0] == "untag":
        untag(argv[1], argv[2])
    elif len(argv) >= 4 and argv[0] == "merge":
        merge(argv[1:-2], argv[-2], argv[-1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (OSError, UnicodeDecodeError) as error:
        sys.exit(f"jackknife_tags.py: {getattr(error, 'filename', None) or ''}: {error}")
