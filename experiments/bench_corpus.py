"""Parsing a corpus (issue 39): peak memory against the input's size, and
words/s against the number of processes, with the output checked identical.

Builds untagged inputs of about the given word counts from a CoNLL-U file
(UD English-EWT train, repeated; LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL
removed), then runs ``kgparser parse`` on them as a user would, each run in
a process of its own, and records its peak resident memory (the largest
process: the parent, or a worker) and its words/s (the command's own
summary line, worker start-up included, model loading not):

    python experiments/bench_corpus.py --model runs/q39/best.pt \\
        --train ../shared/ud/UD_English-EWT/en_ewt-ud-train.conllu \\
        --memory-sizes 100k,1M,5M --speed-size 1M --processes 1,2 --out experiments/results/corpus

writes ``OUT.json`` and ``OUT.md`` (a table), adding each row as it is
measured.  The memory runs use one process, smallest first; the speed runs
parse one file with each number of processes and compare the outputs' SHA-256.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

SUMMARY = re.compile(r"parsed (\d+) sentences, (\d+) words in ([\d.]+)s")
REMOVED_COLUMNS = (2, 3, 4, 5, 6, 7)  # LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL


def words_count(text: str) -> int:
    """``100k``, ``1M``, ``5M`` or a plain number."""
    scale = {"k": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("kM")) * scale)


def untagged_blocks(path: Path) -> list[tuple[str, int]]:
    """Each sentence of ``path`` without its tags and tree, and its word count."""
    blocks = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines, words = [], 0
        for line in block.split("\n"):
            columns = line.split("\t")
            if len(columns) == 10:
                for index in REMOVED_COLUMNS:
                    columns[index] = "_"
                words += columns[0].isdigit()
                line = "\t".join(columns)
            lines.append(line)
        if words:
            blocks.append(("\n".join(lines) + "\n\n", words))
    return blocks


def build_input(blocks: list[tuple[str, int]], words: int, folder: Path) -> Path:
    """A file of the blocks repeated until it holds at least ``words`` words."""
    path = folder / f"corpus-{words}.conllu"
    if path.exists():
        return path
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < words:
            for block, count in blocks:
                handle.write(block)
                written += count
                if written >= words:
                    break
    return path


def measure(model: str, source: Path, processes: int, chunk_size: int | None, output: Path) -> dict:
    """One ``kgparser parse`` run in a fresh launcher process: its summary,
    wall time and the peak memory of its largest process."""
    command = [sys.executable, "-m", "kgparser", "parse", "-m", model, str(source), "-o", str(output),
               "--processes", str(processes), "--quiet"] + (["--chunk-size", str(chunk_size)] if chunk_size else [])
    launcher = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
                "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
                "print(r.returncode, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
                "print(r.stderr)")
    done = subprocess.run([sys.executable, "-c", launcher] + command, capture_output=True, text=True, check=True)
    head, _, stderr = done.stdout.partition("\n")
    code, wall, peak_kb = head.split()
    found = SUMMARY.search(stderr)
    if code != "0" or not found:
        raise SystemExit(f"kgparser parse failed ({code}): {stderr.strip()}")
    sentences, words, seconds = int(found[1]), int(found[2]), float(found[3])
    return {"input": source.name, "processes": processes, "sentences": sentences, "words": words,
            "parse_seconds": seconds, "words_per_second": round(words / seconds), "wall_seconds": round(float(wall), 1),
            "peak_rss_mb": round(int(peak_kb) / 1024, 1), "sha256": _sha256(output), "load": os.getloadavg()[0]}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def write_tables(rows: list[dict], out: Path, machine: str) -> None:
    out.with_suffix(".json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1) + "\n",
                                        encoding="utf-8")
    header = ("| run | input words | processes | words/s | speed-up | parse s | wall s | peak RSS MB | output "
              "| load |\n|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for row in rows:
        base = next((r for r in rows if r["run"] == row["run"] and r["input"] == row["input"]
                     and r["processes"] == 1), None)
        speedup = f"{row['words_per_second'] / base['words_per_second']:.2f}x" if base else ""
        same = "same" if base is None or base["sha256"] == row["sha256"] else "DIFFERS"
        lines.append(f"| {row['run']} | {row['words']:,} | {row['processes']} | {row['words_per_second']:,} | "
                     f"{speedup} | {row['parse_seconds']} | {row['wall_seconds']} | {row['peak_rss_mb']} | {same} "
                     f"| {row['load']:.1f} |")
    out.with_suffix(".md").write_text(f"Machine: {machine}\n\n" + header + "\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--model", required=True)
    options.add_argument("--train", required=True, help="the CoNLL-U file repeated into the inputs")
    options.add_argument("--memory-sizes", default="100k,1M,5M", help="input sizes of the memory runs ('' for none)")
    options.add_argument("--speed-size", default="1M", help="input size of the speed runs")
    options.add_argument("--processes", default="1,2", help="process counts of the speed runs, e.g. 1,2,4,8,16")
    options.add_argument("--chunk-size", type=int, default=None)
    options.add_argument("--work", default="/tmp/bench_corpus", help="folder for the inputs and outputs")
    options.add_argument("--out", required=True, help="OUT.json and OUT.md are written")
    options.add_argument("--machine", default=f"{os.cpu_count()} CPUs")
    args = options.parse_args()
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    blocks = untagged_blocks(Path(args.train))
    rows: list[dict] = []
    speed_input = build_input(blocks, words_count(args.speed_size), work)
    for count in [int(p) for p in args.processes.split(",")]:
        rows.append({"run": "speed", **measure(args.model, speed_input, count, args.chunk_size,
                                               work / f"speed-{count}.conllu")})
        write_tables(rows, out, args.machine)
        print(rows[-1], flush=True)
    for size in sorted(filter(None, args.memory_sizes.split(",")), key=words_count):
        source = build_input(blocks, words_count(size), work)
        rows.append({"run": "memory", **measure(args.model, source, 1, args.chunk_size, work / "memory.conllu")})
        write_tables(rows, out, args.machine)
        print(rows[-1], flush=True)


if __name__ == "__main__":
    main()
