"""Score a predicted CoNLL-U file against gold trees, tags and lemmas (UAS, LAS, universal LAS, UPOS,
XPOS, UFeats, Lemmas), optionally against a second prediction with a paired significance test."""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import KgparserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gold", metavar="GOLD", help="gold CoNLL-U file ('-' for stdin, .gz ok)")
    parser.add_argument("pred", metavar="PRED", help="predicted CoNLL-U file: the same words as GOLD, or the same "
                                                     "text tokenized otherwise (then scored as CoNLL 2018 does)")
    parser.add_argument("--aligned", action="store_true",
                        help="the CoNLL 2018 report (tokens, sentences, words, UPOS/Lemmas/UAS/LAS as F1 over the "
                             "words aligned by characters) even where PRED has GOLD's words; it is the report "
                             "whenever their words differ")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON (fractions in [0, 1])")
    parser.add_argument("--no-punct", action="store_true",
                        help="leave out words whose gold UPOS is PUNCT (default: score every word, as CoNLL 2018)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also report precision/recall/F1 per dependency label and per arc length, and "
                             "the precision/recall of non-projective arcs")
    parser.add_argument("--against", metavar="PRED2",
                        help="a second prediction of GOLD: also print UAS and LAS of PRED2 - PRED with the "
                             "p-value of a paired test over sentences; where either has other words than GOLD "
                             "(or with --aligned), the F1 of every aligned score, tested over the gold sentences")
    parser.add_argument("--test", choices=("bootstrap", "randomization"), default="bootstrap",
                        help="paired test for --against (default: bootstrap, 10,000 samples)")


def run(args: argparse.Namespace) -> int:
    from ..evaluation.aligned import same_text, same_words
    from ..evaluation.scores import check_sentence_counts, evaluate
    from ..io.conllu import read_conllu

    punct = not args.no_punct
    gold = read_conllu(args.gold, require_tree=True)
    pred = read_conllu(args.pred, require_tree=False)
    unparsed_warning(pred, args.pred)
    against = None
    if args.against:
        against = read_conllu(args.against, require_tree=False)
        unparsed_warning(against, args.against)
    if args.aligned or not same_words(gold, pred) or (
            against is not None and not same_words(gold, against) and same_text(gold, against)):
        return run_aligned(args, gold, pred, against)
    scores = evaluate(gold, pred, punct=punct, nonprojective=args.breakdown)
    check_something_to_score(args, gold, scores.words)
    comparison = None
    if against is not None:
        from ..experiments.collect import compare_predictions

        check_sentence_counts(gold, against, args.gold, args.against)
        comparison = compare_predictions(gold, pred, against, punct=punct, test=args.test)
    if args.json:
        data = scores.to_dict(breakdown=args.breakdown)
        if comparison:
            data["against"] = comparison_dict(args.against, comparison)
        print(json.dumps(data, indent=2))
    else:
        print(scores.format(breakdown=args.breakdown))
        if comparison:
            print(format_comparison(args.pred, args.against, comparison))
    return 0


def run_aligned(args: argparse.Namespace, gold, pred, against=None) -> int:
    """Score a prediction of other words (or with ``--aligned``) through the
    character alignment; with ``--against``, both predictions' F1 with a paired
    test over the gold sentences."""
    from ..evaluation.aligned import NAMES, compare_aligned, evaluate_aligned, same_words

    word_by_word = [option for option, given in (("--breakdown", args.breakdown), ("--no-punct", args.no_punct))
                    if given]
    if word_by_word:
        other = next((path for path, sentences in ((args.pred, pred), (args.against, against))
                      if sentences is not None and not same_words(gold, sentences)), args.pred)
        raise KgparserError(f"{', '.join(word_by_word)}: only for a prediction with the gold words; "
                            f"{other} has other words (or --aligned asks for the aligned report)")
    scores = evaluate_aligned(gold, pred, args.gold, args.pred)
    check_something_to_score(args, gold, scores.scores["words"].gold)
    comparison = None
    if against is not None:
        comparison = compare_aligned(gold, pred, against, names=(args.gold, args.pred, args.against),
                                     test=args.test)
    if args.json:
        data = scores.to_dict()
        if comparison:
            data["against"] = comparison_dict(args.against, comparison)
        print(json.dumps(data, indent=2))
    else:
        print(scores.format())
        if comparison:
            print(format_comparison(args.pred, args.against, comparison, names=NAMES, score="F1, ",
                                    unit="gold sentences"))
    return 0


def check_something_to_score(args: argparse.Namespace, gold, words: int) -> None:
    """Scores over no ``words`` are not scores (0.00 everywhere): an error, whichever report."""
    if not words:
        raise KgparserError(f"{args.gold}, {args.pred}: nothing to score: "
                            + ("no sentences" if not gold else "every word is PUNCT, left out by --no-punct"))


def unparsed_warning(pred, path: str) -> None:
    """Words of a prediction without a HEAD (``_``) count as wrong: a file
    with no HEAD at all is not a parse (an error), a few are reported."""
    missing = [(sentence, d) for sentence in pred for d in range(1, sentence.n + 1) if sentence.heads[d] == -1]
    if not missing:
        return
    total = sum(sentence.n for sentence in pred)
    if len(missing) == total:
        raise KgparserError(f"{path}: no word has a HEAD (every HEAD is '_'): not a parsed file; "
                            f"parse it first with kgparser parse")
    sentence, word = missing[0]
    print(f"kgparser evaluate: warning: {path}: {len(missing)} of {total} words have no HEAD ('_') and count "
          f"as wrong; the first is word {word} of the sentence at line {sentence.line}", file=sys.stderr)


def comparison_dict(against: str, comparison: dict) -> dict:
    """The ``against`` block of ``--json``: per metric both scores, the difference and the test."""
    return {"pred": against, **{metric: {"pred": r.score_a, "against": r.score_b, "delta": r.delta,
                                         "p_value": r.p_value, "test": r.test, "samples": r.samples}
                                for metric, r in comparison.items()}}


def format_comparison(pred: str, against: str, comparison: dict, names: dict | None = None, score: str = "",
                      unit: str = "sentences") -> str:
    """The table of ``--against``: a row per metric (``names``: how to call it;
    its name in capitals otherwise), PRED's and PRED2's score, the difference
    and the p-value; ``score`` and ``unit`` for the title."""
    first = next(iter(comparison.values()))
    labels = {metric: (names or {}).get(metric, metric.upper()) for metric in comparison}
    width = max([6] + [len(label) + 1 for label in labels.values()])
    lines = [f"{against} against {pred} ({score}paired {first.test} test, {first.samples:,} samples over {unit}):",
             f"{'':{width}}{'PRED':>8}{'PRED2':>8}{'PRED2-PRED':>12}{'p':>9}"]
    for metric, r in comparison.items():
        lines.append(f"{labels[metric]:{width}}{100 * r.score_a:8.2f}{100 * r.score_b:8.2f}"
                     f"{100 * r.delta:+12.2f}{r.p_value:9.4f}")
    return "\n".join(lines)
