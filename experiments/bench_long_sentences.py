"""Time the parsing of single long sentences with an untrained model of the
default sizes (KG 2016: 100 + 25 embeddings, 2 x 125 BiLSTM units, 100 hidden
units), one transition system at a time; the best wall-clock and CPU seconds of
``--repeat`` runs (the CPU time is the steadier figure on a shared machine).

The decoder's cost per sentence grows with its number of transitions:
Covington makes O(n^2) of them (mostly No-Arc), every other system O(n).
An untrained model is enough to measure that cost: the weights change which
transitions are taken, not what each costs.

    python experiments/bench_long_sentences.py --lengths 300 1000 --systems covington arc-hybrid
    python experiments/bench_long_sentences.py --lengths 25 --count 500    # many short ones, batched
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import time


def machine() -> str:
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.1f} at start")


def untrained_parser(system: str, seed: int, batch_size: int):
    """A Parser around a fresh default-size model whose vocabularies come
    from a few random sentences (tiny_words forms, tags A-C)."""
    import torch

    from kgparser.config import config_from_dict
    from kgparser.inference.parser import Parser
    from kgparser.io.conllu import parse_conllu
    from kgparser.model import Model

    torch.manual_seed(seed)
    rows = [f"{d}\tw{d}\t_\t{'ABC'[d % 3]}\t_\t_\t{d - 1}\tdep\t_\t_" for d in range(1, 21)]
    train = list(parse_conllu("\n".join(rows) + "\n\n", "bench.conllu"))
    model = Model.build(config_from_dict({"system": {"name": system}}), train)
    return Parser(model, batch_size=batch_size)


def sentence(length: int, rng: random.Random) -> list[tuple[str, str]]:
    return [(f"w{rng.randint(1, 30)}", rng.choice("ABC")) for _ in range(length)]


def best_times(run, repeat: int) -> tuple[float, float]:
    """The least wall-clock and the least CPU seconds of ``repeat`` calls of ``run``."""
    walls, cpus = [], []
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
    return min(walls), min(cpus)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--systems", nargs="+", default=["covington"])
    parser.add_argument("--count", type=int, default=1, help="sentences of each length, parsed in one call")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    print(f"machine: {machine()}; torch threads {torch.get_num_threads()}")
    for system in args.systems:
        parse = untrained_parser(system, args.seed, args.batch_size)
        for length in args.lengths:
            rng = random.Random(args.seed)
            sentences = [sentence(length, rng) for _ in range(args.count)]
            seconds, cpu = best_times(lambda parse=parse, sentences=sentences: parse.parse(sentences), args.repeat)
            words = length * args.count
            print(f"{system:16} {args.count} x {length:4} words: {seconds:7.2f} s, {cpu:7.2f} CPU s "
                  f"({words / seconds:6.0f} words/s)", flush=True)


if __name__ == "__main__":
    main()
