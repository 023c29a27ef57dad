"""The learned tokenizer (kgparser.tokenize) beside spaCy's rules on a UD
treebank's test text: train on the training file (development file for early
stopping), rebuild the test file's running text (kgparser.io.rawtext.text_of),
segment it as `kgparser parse --input-format raw` reads raw text (paragraphs
at blank lines, windows of io.rawtext.WINDOW characters), and score Tokens,
Sentences and Words F1 with the aligned scorer (the CoNLL 2018 shared task's
method, kgparser.evaluation.aligned); also characters/s of the tokenizer on
one thread.

    nice -n 10 .venv/bin/python experiments/tokenizer_study.py \
        ../shared/ud/UD_English-EWT en [--set epochs=12] [--save model.pt]

One torch thread throughout.  Prints one Markdown table row and the training log.
"""
from __future__ import annotations

import argparse
import glob
import io
import os
import time
from dataclasses import asdict

import torch

from kgparser.evaluation.aligned import evaluate_aligned
from kgparser.io.atomic import atomic_path
from kgparser.io.conllu import read_conllu
from kgparser.io.rawtext import WINDOW, paragraph_spans, stream_raw, text_of
from kgparser.tokenize.model import Tokenizer, TokenizerConfig
from kgparser.tokenize.rules import raw_sentences
from kgparser.tokenize.train import train_tokenizer


def learned_sentences(tokenizer: Tokenizer, text: str):
    """The text read as ``parse --input-format raw`` reads it, the learned tokenizer as the segmenter."""
    return list(stream_raw(io.StringIO(text), "<text>", tokenizer))


def scores(gold, pred) -> dict[str, float]:
    result = evaluate_aligned(gold, pred).scores
    return {name: 100 * result[name].f1 for name in ("tokens", "sentences", "words")}


def split_file(treebank: str, split: str) -> str:
    """A UD treebank folder's ``*-ud-SPLIT.conllu``, or ``SPLIT.conllu`` (the shipped sample)."""
    found = glob.glob(os.path.join(treebank, f"*-ud-{split}.conllu")) or glob.glob(os.path.join(treebank,
                                                                                               f"{split}.conllu"))
    return found[0]


def configured(settings: list[str]) -> TokenizerConfig:
    """The default config with ``FIELD=VALUE`` settings (of the field's type)."""
    config = TokenizerConfig()
    for setting in settings:
        field, _, value = setting.partition("=")
        setattr(config, field, type(getattr(config, field))(value))
    return config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("treebank", help="a UD treebank folder")
    parser.add_argument("lang", help="spaCy's language code for the rules")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                        help="TokenizerConfig fields other than the defaults (epochs=12 layers=2 ...)")
    parser.add_argument("--save", help="write the tokenizer's config and to_data() here")
    parser.add_argument("--load", help="a tokenizer saved by --save: measure it, no training")
    args = parser.parse_args()
    torch.set_num_threads(1)
    train, dev, test = (read_conllu(split_file(args.treebank, split)) for split in ("train", "dev", "test"))
    began = time.perf_counter()
    if args.load:
        saved = torch.load(args.load, weights_only=True)
        tokenizer = Tokenizer.from_data(saved, TokenizerConfig(**saved["config"]))
    else:
        tokenizer = train_tokenizer(train, dev, configured(args.set))
    training = time.perf_counter() - began
    if args.save:
        with atomic_path(args.save) as temporary:
            torch.save({"config": asdict(tokenizer.config), **tokenizer.to_data()}, temporary)
    text = text_of(test)
    learned_sentences(tokenizer, text[:1000])  # the character tables built before the tokenizer is timed
    began = time.perf_counter()
    learned = learned_sentences(tokenizer, text)
    seconds = time.perf_counter() - began
    pieces = [text[i:min(i + WINDOW, b)] for a, b in paragraph_spans(text) for i in range(a, b, WINDOW)]
    began = time.perf_counter()
    tokenizer.segment(pieces)
    segment_seconds = time.perf_counter() - began
    raw_sentences(text[:1000], args.lang)  # spaCy's pipeline loaded before it is timed
    began = time.perf_counter()
    by_rules = raw_sentences(text, args.lang)
    rules_seconds = time.perf_counter() - began
    rules, ours = scores(test, by_rules), scores(test, learned)
    assert text_of(learned) == text
    name = os.path.basename(os.path.normpath(args.treebank)).removeprefix("UD_")
    print("| treebank | tokenizer | Tokens | Sentences | Words | training | characters/s: whole reader "
          "| segmenter alone |")
    print(f"| {name} | rules | {rules['tokens']:.2f} | {rules['sentences']:.2f} | {rules['words']:.2f} | | "
          f"{len(text) / rules_seconds:,.0f} | |")
    print(f"| {name} | learned | {ours['tokens']:.2f} | {ours['sentences']:.2f} | {ours['words']:.2f} | "
          f"{training / 60:.1f} min | {len(text) / seconds:,.0f} | {len(text) / segment_seconds:,.0f} |")


if __name__ == "__main__":
    main()
