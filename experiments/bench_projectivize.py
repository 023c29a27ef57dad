"""Time optimal projectivization (``kgparser.projectivize.projectivize_tree``)
per tree on treebanks, as compared in docs/history/oracles-and-projectivization.md with Nederhof's 0.342 ms
per tree (Java).

    python experiments/bench_projectivize.py ../shared/ud/*/*-train.conllu
"""
from __future__ import annotations

import sys
import time

from kgparser.io.conllu import read_conllu
from kgparser.projectivize import projectivize_tree
from kgparser.transitions.trees import is_projective


def main(paths: list[str]) -> None:
    print("| treebank | trees | non-projective | ms per tree | ms per non-projective tree |")
    print("|---|---|---|---|---|")
    for path in paths:
        sentences = read_conllu(path)
        total = nonproj_time = 0.0
        nonproj = 0
        for s in sentences:
            started = time.perf_counter()
            projectivize_tree(s.heads, s.deprels)
            spent = time.perf_counter() - started
            total += spent
            if not is_projective(s.heads):
                nonproj += 1
                nonproj_time += spent
        print(f"| {path.rsplit('/', 1)[-1]} | {len(sentences)} | {nonproj} | {1e3 * total / len(sentences):.3f} | "
              f"{1e3 * nonproj_time / max(nonproj, 1):.2f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
