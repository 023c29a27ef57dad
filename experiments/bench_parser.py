"""Measure training and parsing speed and peak memory of kgparser.

Training: runs ``kgparser train`` on a config for a given number of epochs in
a child process and reads tokens/s and seconds per epoch from its
``metrics.jsonl``; peak memory is the child's maximum resident set size.

Parsing: loads a checkpoint and parses a CoNLL-U file several times in this
process, reporting the best and mean tokens/s and the peak resident memory.

    python experiments/bench_parser.py train configs/arc-hybrid-dynamic.yaml --epochs 1
    python experiments/bench_parser.py parse --model runs/x/best.pt ../shared/ud/UD_English-EWT/en_ewt-ud-test.conllu
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def machine() -> str:
    load = os.getloadavg()[0]
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average {load:.1f} at start"


def bench_train(args) -> None:
    out = Path(args.output_dir or tempfile.mkdtemp(prefix="kgbench-"))
    command = [sys.executable, "-m", "kgparser.cli", "train", args.config, "--quiet",
               "--set", f"output_dir={out}", "--set", f"training.epochs={args.epochs}",
               "--set", f"threads={args.threads}", "--set", "training.tensorboard=false", *args.set]
    print(f"machine: {machine()}\ncommand: {' '.join(command)}")
    started = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    epochs = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    epochs = [e for e in epochs if "tokens_per_second" in e]
    for e in epochs:
        print(f"epoch {e['epoch']}: {e['tokens_per_second']:.0f} tok/s wall, "
              f"{e.get('tokens_per_cpu_second') or 0:.0f} tok/CPU-s, {e.get('epoch_seconds', 0):.0f} s per epoch, "
              f"oracle {e.get('oracle_seconds', 0):.1f} s, dev LAS {100 * e.get('dev_las', 0):.2f}")
    print(f"total wall time {wall:.0f} s (including data loading and dev/test evaluation); "
          f"peak memory {peak_mb:.0f} MB")


def bench_parse(args) -> None:
    import torch

    from kgparser import Parser
    from kgparser.io.conllu import read_conllu

    if args.threads:
        torch.set_num_threads(args.threads)
    sentences = read_conllu(args.input)
    if args.strip_tags:  # text as users have it: the model's tagger (if any) predicts the tags
        for sentence in sentences:
            sentence.set_tags({column: [None] * sentence.n for column in ("upos", "xpos", "feats")})
    tokens = sum(s.n for s in sentences)
    parser = Parser.load(args.model, batch_size=args.batch_size)
    print(f"machine: {machine()}\nmodel: {args.model}; input: {args.input} ({len(sentences)} sentences, "
          f"{tokens} tokens); batch size {args.batch_size}; threads {torch.get_num_threads()}")
    rates, cpu_rates = [], []
    for _ in range(args.repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        parser.parse(sentences, tags="input" if args.tags_input else "auto")
        rates.append(tokens / (time.perf_counter() - started))
        cpu_rates.append(tokens / (time.process_time() - cpu_started))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"parsing: best {max(rates):.0f} tok/s, mean {sum(rates) / len(rates):.0f} tok/s "
          f"over {args.repeat} runs (per CPU second: best {max(cpu_rates):.0f}); peak memory {peak_mb:.0f} MB")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    train = sub.add_parser("train", help="training speed")
    train.add_argument("config")
    train.add_argument("--epochs", type=int, default=1)
    train.add_argument("--threads", type=int, default=1)
    train.add_argument("--output-dir", default=None)
    train.add_argument("--set", action="append", default=[], help="extra --set overrides (KEY=VALUE)")
    parse = sub.add_parser("parse", help="parsing speed")
    parse.add_argument("input")
    parse.add_argument("--model", required=True)
    parse.add_argument("--batch-size", type=int, default=64)
    parse.add_argument("--threads", type=int, default=1)
    parse.add_argument("--repeat", type=int, default=3)
    parse.add_argument("--strip-tags", action="store_true",
                       help="remove UPOS, XPOS and FEATS first (untagged text; a tagger model predicts them)")
    parse.add_argument("--tags-input", action="store_true",
                       help="parse with tags=input (a gold-tag model on stripped input, for comparison)")
    args = parser.parse_args(argv)
    if args.what == "train":
        args.set = [x for pair in (("--set", s) for s in args.set) for x in pair]
        bench_train(args)
    else:
        bench_parse(args)


if __name__ == "__main__":
    main()
