"""Constrained parsing demonstration (Nivre, Goldberg & McDonald 2014) on a test set.

    python experiments/constraints_demo.py --model runs/constraints-demo-arc-eager-end/best.pt \\
        --test ../shared/ud/UD_English-EWT/en_ewt-ud-test.conllu --reps 5 --json out.json

(a) imperatives: sentences whose first word is a VERB heading the sentence in
    gold; constrain ``0 -> 1 root``; LAS with / without on those sentences.
(b) gold constraints: spans over gold multi-word subtrees whose internal
    relations are all flat/fixed/compound (contiguous, complete: option
    ``none``), and arcs (with labels) from a random 10% of the gold arcs; LAS
    with / without on all sentences and on the words no arc constraint covers.
    Sets no projective tree satisfies (gold is non-projective) are dropped
    with ``on_bad_constraints="skip"`` and counted.
(c) speed: the whole test set parsed with and without the (b) constraints,
    ``--reps`` times each, interleaved; tokens/s of ``Parser.parse`` end to end
    (constraint checking included), by wall clock and by process CPU time (the
    latter is less disturbed by other jobs on a shared machine); the ratio of
    the medians and the median of the per-turn ratios.  A full garbage
    collection precedes each parse, which then pays for its own garbage only.

LAS here: head and full DEPREL correct, every word scored (punctuation too).
"""
from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kgparser.inference.decoding_constraints import ConstraintWarning  # noqa: E402
from kgparser.inference.parser import Parser  # noqa: E402
from kgparser.io.conllu import read_conllu  # noqa: E402
from kgparser.transitions.trees import children  # noqa: E402

FLAT_RELATIONS = ("flat", "fixed", "compound")


def las(gold, pred, skip=None) -> tuple[int, int]:
    """(correct, scored) words: head and full label right; ``skip[i]`` are word sets left out."""
    correct = scored = 0
    for i, (g, p) in enumerate(zip(gold, pred)):
        for d in range(1, g.n + 1):
            if skip and d in skip[i]:
                continue
            scored += 1
            correct += g.heads[d] == p.heads[d] and g.deprels[d] == p.deprels[d]
    return correct, scored


def percent(pair: tuple[int, int]) -> float:
    return round(100.0 * pair[0] / pair[1], 2) if pair[1] else float("nan")


def is_imperative_like(sentence) -> bool:
    return sentence.n > 1 and sentence.upos[0] == "VERB" and sentence.heads[1] == 0


def flat_spans(sentence) -> list[tuple[int, int, str]]:
    """Maximal gold subtrees of 2+ words, contiguous, all internal relations flat/fixed/compound."""
    kids = children(sentence.heads)

    def subtree(word):
        words = [word]
        for k in kids[word]:
            if sentence.deprels[k].split(":")[0] not in FLAT_RELATIONS:
                return None
            inner = subtree(k)
            if inner is None:
                return None
            words += inner
        return words

    spans, covered = [], set()
    for word in range(1, sentence.n + 1):
        if word in covered or not kids[word]:
            continue
        words = subtree(word)
        if words is None or max(words) - min(words) + 1 != len(words):
            continue
        head = sentence.heads[word]
        if head > 0 and sentence.deprels[word].split(":")[0] in FLAT_RELATIONS and subtree(head) is not None:
            continue  # part of a larger flat subtree, found from its head
        spans.append((min(words), max(words), "none"))
        covered |= set(words)
    return spans


def gold_constraints(sentence, rng: random.Random, arc_fraction: float) -> dict:
    arcs = [[sentence.heads[d], d, sentence.deprels[d]] for d in range(1, sentence.n + 1)
            if rng.random() < arc_fraction]
    return {"arcs": arcs, "spans": [list(s) for s in flat_spans(sentence)]}


def parse_quietly(parser, sentences, constraints):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)
        return parser.parse(sentences, constraints=constraints, on_bad_constraints="skip")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--arc-fraction", type=float, default=0.1)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--speed-only", action="store_true", help="only (c), the speed measurement")
    ap.add_argument("--write-jsonl", default=None,
                    help="also write the (b) constraints as a JSON-lines file (by sent_id) for `kgparser parse`")
    args = ap.parse_args()

    parser = Parser.load(args.model, batch_size=args.batch_size, threads=1)
    gold = read_conllu(args.test)
    results: dict = {"model": args.model, "test": args.test, "sentences": len(gold), "words": gold.n_words}

    rng = random.Random(args.seed)
    constraints = [gold_constraints(s, rng, args.arc_fraction) for s in gold]
    if not args.speed_only:
        demonstrate(parser, gold, constraints, results, args)
    results["c_speed_tokens_per_s"] = measure_speed(parser, gold, constraints, args.reps)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0


def demonstrate(parser, gold, constraints, results: dict, args) -> None:
    """(a) and (b) of the module docstring, into ``results``."""
    imperative = [s for s in gold if is_imperative_like(s)]
    free = parser.parse(imperative)
    forced = parser.parse(imperative, constraints=[{"arcs": [[0, 1, "root"]]}] * len(imperative))
    results["a_imperative"] = {
        "sentences": len(imperative), "words": sum(s.n for s in imperative),
        "root_right_unconstrained": sum(p.heads[1] == 0 for p in free),
        "las_unconstrained": percent(las(imperative, free)), "las_constrained": percent(las(imperative, forced)),
        "violated": len(parser.constraint_report.violated)}

    if args.write_jsonl:
        with open(args.write_jsonl, "w", encoding="utf-8") as handle:
            for sentence, c in zip(gold, constraints):
                if c["arcs"] or c["spans"]:
                    handle.write(json.dumps({"sent_id": sentence.sent_id, **c}) + "\n")
    free = parser.parse(gold)
    constrained = parse_quietly(parser, gold, constraints)
    report = parser.constraint_report
    skipped = set(report.skipped_sentences)
    covered = [set() if i in skipped else {a[1] for a in c["arcs"]} for i, c in enumerate(constraints)]
    results["b_gold_spans_arcs"] = {
        "spans": sum(len(c["spans"]) for c in constraints),
        "span_words": sum(b - a + 1 for c in constraints for a, b, _ in c["spans"]),
        "arcs": sum(len(c["arcs"]) for c in constraints),
        "sentences_constrained": report.constrained, "sentences_dropped": len(report.skipped),
        "violated": len(report.violated),
        "las_unconstrained": percent(las(gold, free)), "las_constrained": percent(las(gold, constrained)),
        "las_unconstrained_uncovered_words": percent(las(gold, free, covered)),
        "las_constrained_uncovered_words": percent(las(gold, constrained, covered))}
    spans_only = [{"spans": c["spans"]} for c in constraints]
    with_spans = parse_quietly(parser, gold, spans_only)
    results["b_gold_spans_arcs"]["las_spans_only"] = percent(las(gold, with_spans))


def measure_speed(parser, gold, constraints, reps: int) -> dict:
    """(c): tokens/s with and without ``constraints``, interleaved, ``reps`` times each."""
    speeds: dict = {name: {"wall": [], "cpu": []} for name in ("unconstrained", "constrained")}
    for _ in range(reps):
        for name, given in (("unconstrained", None), ("constrained", constraints)):
            gc.collect()  # each parse pays for its own garbage, not for the one before it
            wall, cpu = time.perf_counter(), time.process_time()
            parse_quietly(parser, gold, given) if given else parser.parse(gold)
            speeds[name]["wall"].append(gold.n_words / (time.perf_counter() - wall))
            speeds[name]["cpu"].append(gold.n_words / (time.process_time() - cpu))
    speed = {name: {clock: {"runs": [round(v) for v in values], "median": round(statistics.median(values))}
                    for clock, values in clocks.items()} for name, clocks in speeds.items()}
    for clock in ("wall", "cpu"):
        constrained, unconstrained = speeds["constrained"][clock], speeds["unconstrained"][clock]
        speed[f"constrained_over_unconstrained_{clock}"] = round(
            statistics.median(constrained) / statistics.median(unconstrained), 3)
        # each turn's pair ran back to back, so their ratio is less disturbed by load changing between turns
        speed[f"constrained_over_unconstrained_{clock}_per_turn"] = round(
            statistics.median(c / u for c, u in zip(constrained, unconstrained)), 3)
    return speed


if __name__ == "__main__":
    sys.exit(main())
