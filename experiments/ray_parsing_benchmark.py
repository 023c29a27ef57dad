"""Parsing on Ray (issue 51): ``kgparser parse --engine ray`` with 1 and 2
actors against ``--processes 1`` and ``2`` on one corpus: words/s, start-up,
the peak memory of the driver and of each worker or actor, and the outputs
compared byte for byte.

Builds the corpus from a CoNLL-U file (UD English-EWT train, LEMMA, UPOS,
XPOS, FEATS, HEAD, DEPREL removed: ``bench_corpus.untagged_blocks``),
``--copies`` times over (5: about 1M words) or cut at ``--words``; first
checks that the sample's test file parses to the same bytes with ``--engine
ray --processes 2`` (chunks of 20 sentences, so both actors parse) as with
``--processes 1``; then runs each configuration as a user would, a
``kgparser parse`` process of its own per run, and samples every 0.2 s the
peak resident memory (``VmHWM``) of the command, of its workers (local: its
child processes) or actors (``ray::_Actor`` processes under it: the local
Ray instance it starts is its child) and of Ray's own processes (GCS,
raylet, agents: their peaks summed).  words/s is the command's summary line
(Ray's start-up included, model loading not); start-up is the wall time of
the same command on the first 10 sentences; "after start-up" is the words
over the wall time less that start-up.  On an idle 2-core machine:

    python experiments/ray_parsing_benchmark.py --model runs/quickstart/best.pt \\
        --train ../shared/ud/UD_English-EWT/en_ewt-ud-train.conllu --copies 5 \\
        --out experiments/results/ray_parsing/vm2 --machine "2-core VM, idle"

writes ``OUT.json`` and ``OUT.md`` (a table), adding each row as it is measured.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_corpus import SUMMARY, _sha256, untagged_blocks  # noqa: E402

from kgparser.io.atomic import write_text  # noqa: E402

SAMPLE_TEST = Path(__file__).resolve().parents[1] / "kgparser" / "resources" / "en_ewt_sample" / "test.conllu"
#: seconds between two looks at the processes' memory
SAMPLE_SECONDS = 0.2


def build_corpus(blocks: list[tuple[str, int]], copies: int, words: int | None, path: Path) -> int:
    """``copies`` times the blocks, or their first ``words`` words (whole
    sentences, repeated as needed); the words written."""
    written = 0
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(copies if words is None else 10 ** 6):
            for block, count in blocks:
                if words is not None and written >= words:
                    return written
                handle.write(block)
                written += count
    return written


def _parents() -> dict[int, int]:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):  # ended meanwhile
            pass
    return parents


def _descendants(pid: int) -> set[int]:
    parents = _parents()
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _peak_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _role(pid: int, driver: int, parents: dict[int, int], command: str) -> str:
    """``worker`` (a parsing process or actor), ``ray`` (Ray's own) or ``other``."""
    if command.startswith("ray::_Actor"):
        return "worker"
    if "ray" in command and ("gcs_server" in command or "raylet" in command or command.startswith("ray::")
                             or "ray/_private" in command or "ray/dashboard" in command):
        return "ray"
    if parents.get(pid) == driver and "resource_tracker" not in command and "-m kgparser parse" in command:
        return "worker"  # a forked worker has its parent's command line
    return "other"


def run(model: str, source: Path, target: Path, engine: str, processes: int, chunk_size: int | None) -> dict:
    """One ``kgparser parse`` run, its memory sampled (see the module docstring)."""
    command = [sys.executable, "-m", "kgparser", "parse", "-m", model, str(source), "-o", str(target),
               "--engine", engine, "--processes", str(processes), "--quiet"]
    command += ["--chunk-size", str(chunk_size)] if chunk_size else []
    environment = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"}
    started = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=environment)
    peaks: dict[int, tuple[str, int]] = {}
    while process.poll() is None:
        parents = _parents()
        for pid in {process.pid} | _descendants(process.pid):
            peak = _peak_kb(pid)
            if peak is not None:
                role = "driver" if pid == process.pid else _role(pid, process.pid, parents, _command_line(pid))
                peaks[pid] = (role, max(peak, peaks.get(pid, (role, 0))[1]))
        time.sleep(SAMPLE_SECONDS)
    wall = time.perf_counter() - started
    stderr = process.stderr.read() if process.stderr else ""
    found = SUMMARY.search(stderr)
    if process.returncode != 0 or not found:
        raise SystemExit(f"kgparser parse failed ({process.returncode}): {stderr.strip()}")
    sentences, words, seconds = int(found[1]), int(found[2]), float(found[3])
    megabytes = {role: sorted((round(kb / 1024) for r, kb in peaks.values() if r == role), reverse=True)
                 for role in ("driver", "worker", "ray")}
    return {"engine": engine, "processes": processes, "sentences": sentences, "words": words,
            "parse_seconds": seconds, "words_per_second": round(words / max(seconds, 0.05)),  # 0.0 s: rounded
            "wall_seconds": round(wall, 1),
            "driver_mb": megabytes["driver"][0] if megabytes["driver"] else None,
            "worker_mb": megabytes["worker"], "ray_mb": sum(megabytes["ray"]), "sha256": _sha256(target),
            "load": round(os.getloadavg()[0], 2)}


def write_tables(result: dict, out: Path) -> None:
    write_text(out.with_suffix(".json"), json.dumps(result, indent=1) + "\n")
    rows = result["rows"]
    base = next((r for r in rows if r["engine"] == "local" and r["processes"] == 1), None)
    lines = [f"Machine: {result['machine']}; corpus: {result['corpus']}", "",
             f"Sample check (`{SAMPLE_TEST.name}`, `--engine ray --processes 2 --chunk-size 20` against "
             f"`--processes 1`): {result.get('sample_check', 'not run')}", "",
             "| engine | processes | words | words/s | speed-up | words/s after start-up | speed-up | start-up s "
             "| wall s | peak RSS driver MB | peak RSS each worker MB | Ray's own MB | output | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        speedup = f"{row['words_per_second'] / base['words_per_second']:.2f}x" if base else ""
        steady = row["words"] / max(row["wall_seconds"] - row["startup_seconds"], 1e-9)
        base_steady = base["words"] / max(base["wall_seconds"] - base["startup_seconds"], 1e-9) if base else None
        same = "same" if base is None or base["sha256"] == row["sha256"] else "DIFFERS"
        lines.append(f"| {row['engine']} | {row['processes']} | {row['words']:,} | {row['words_per_second']:,} | "
                     f"{speedup} | {steady:,.0f} | {f'{steady / base_steady:.2f}x' if base_steady else ''} | "
                     f"{row['startup_seconds']} | {row['wall_seconds']} | {row['driver_mb']} | "
                     f"{', '.join(map(str, row['worker_mb'])) or '-'} | {row['ray_mb'] or '-'} | {same} | "
                     f"{row['load']} |")
    write_text(out.with_suffix(".md"), "\n".join(lines) + "\n")


def sample_check(model: str, work: Path) -> str:
    one, on_ray = work / "sample-1.conllu", work / "sample-ray-2.conllu"
    run(model, SAMPLE_TEST, one, "local", 1, 20)
    run(model, SAMPLE_TEST, on_ray, "ray", 2, 20)
    return "identical" if one.read_bytes() == on_ray.read_bytes() else "DIFFERS"


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--model", required=True)
    options.add_argument("--train", required=True, help="the CoNLL-U file repeated into the corpus")
    options.add_argument("--copies", type=int, default=5, help="copies of --train in the corpus (default 5)")
    options.add_argument("--words", type=int, default=None, help="instead: the corpus's first N words (a trial)")
    options.add_argument("--runs", default="local:1,local:2,ray:1,ray:2", help="ENGINE:PROCESSES, comma-separated")
    options.add_argument("--chunk-size", type=int, default=None)
    options.add_argument("--work", default="/tmp/ray_parsing_benchmark", help="folder for the inputs and outputs")
    options.add_argument("--out", required=True, help="OUT.json and OUT.md are written")
    options.add_argument("--machine", default=f"{os.cpu_count()} CPUs")
    args = options.parse_args()
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    blocks = untagged_blocks(Path(args.train))
    corpus = work / "corpus.conllu"
    words = build_corpus(blocks, args.copies, args.words, corpus)
    tiny = work / "tiny.conllu"
    tiny.write_text("".join(block for block, _ in blocks[:10]), encoding="utf-8")
    result: dict = {"machine": args.machine, "model": args.model, "rows": [],
                    "corpus": f"{Path(args.train).name}, " + (f"{args.copies} copies" if args.words is None
                                                              else "cut") + f", {words:,} words, untagged"}
    result["sample_check"] = sample_check(args.model, work)
    print("sample check:", result["sample_check"], flush=True)
    for spec in args.runs.split(","):
        engine, processes = spec.split(":")
        startup = run(args.model, tiny, work / "tiny-out.conllu", engine, int(processes), args.chunk_size)
        row = run(args.model, corpus, work / f"out-{engine}-{processes}.conllu", engine, int(processes),
                  args.chunk_size)
        row["startup_seconds"] = startup["wall_seconds"]
        result["rows"].append(row)
        write_tables(result, out)
        print(row, flush=True)


if __name__ == "__main__":
    main()
