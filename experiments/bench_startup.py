"""Start-up of ``kgparser parse`` (issue 49): the whole process, as a user
runs it, one torch thread, pinned to one core, on a small input; kgparser
trees taking turns (each a checkout or a copy of its ``kgparser/``, put first
on ``PYTHONPATH``), and levers of issue 49 switched off one at a time, to
see what each gives.

    python experiments/bench_startup.py --model MODEL.pt one.conllu [--trees OLD NEW] \\
        [--levers none tokenizer model transformers fingerprint gc-pause freeze release ahead premix int8] \\
        [--quantize] [--rounds 5] [--core 1]

Levers (only for a tree that has them; ``none`` switches nothing off):

* ``tokenizer``: the encoder's tokenizer loaded by transformers, not read with ``tokenizers``;
* ``model``: the encoder's layers loaded by transformers, not built in plain torch;
* ``transformers``: both (transformers imported, as before issue 49);
* ``fingerprint``: the encoder's fingerprint hashed, not taken from its cache;
* ``gc-pause``: the cyclic collector left running while torch is imported and the model loaded;
* ``freeze``: no ``gc.freeze()`` before the interpreter's exit;
* ``release``: the C heap's free pages not given back after encoder batches;
* ``slack-N``: given back after an encoder batch where the process has grown
  by more than N MB since the last time (default 128: ``memory.RELEASE_SLACK``);
* ``ahead``: the encoder run on each batch's sentences, not on those of many
  batches at once (``Inputs.states_ahead``);
* ``premix``: the encoder's states cached one per layer and mixed by the
  network, not mixed by the encoder before they are pooled (``Inputs._fixed_mix``);
* ``int8``: the last tree parses without ``--quantize`` where ``--quantize`` is given.

``--quantize`` parses with ``kgparser parse --quantize`` (the encoder in
int8) in the last tree's runs (an older tree may lack the option).

Prints a Markdown table: wall and CPU seconds (user + system, of the parse
process), peak RSS, each the median of ``--rounds`` (the minimum in
brackets), and whether the output is byte-identical to the first tree's
with no lever off.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LEVERS = ("none", "tokenizer", "model", "transformers", "fingerprint", "gc-pause", "freeze", "release", "ahead",
          "premix", "int8")


def switched_off(lever: str) -> None:
    """Undo one lever of issue 49 in this process (before the command runs)."""
    if lever in ("tokenizer", "transformers"):
        from kgparser.model import encoder
        encoder.folder_tokenizer = lambda folder: None  # type: ignore[assignment]
    if lever in ("model", "transformers"):
        from kgparser.model import encoder
        encoder.plain_encoder = lambda *args: None  # type: ignore[assignment]
    if lever == "fingerprint":
        from kgparser.model import fingerprint
        fingerprint._read_cache = lambda *args: None  # type: ignore[assignment]
    if lever == "gc-pause":
        import kgparser.commands.parse as parse
        parse._collector_paused = contextlib.nullcontext  # type: ignore[assignment]
    if lever == "release":
        from kgparser.model import encoder
        encoder.release_free_memory = lambda: None  # type: ignore[assignment]
    if lever == "ahead":
        from kgparser.model.inputs import Inputs
        Inputs.states_ahead = lambda self, sentences: None  # type: ignore[method-assign]
    if lever == "premix":
        from kgparser.model.inputs import Inputs
        Inputs._fixed_mix = lambda self: None  # type: ignore[method-assign]
    if lever.startswith("slack-"):
        from kgparser.model import memory
        memory.RELEASE_SLACK = int(lever.split("-", 1)[1]) * 2 ** 20


def child(lever: str, arguments: list[str]) -> int:
    """``kgparser ARGUMENTS`` in this process, with ``lever`` off."""
    from kgparser import cli

    switched_off(lever)
    sys.argv = ["kgparser", *arguments]
    return cli.main(arguments) if lever == "freeze" else cli.main()  # an argv given: no gc.freeze at the end


def one_run(tree: Path | None, lever: str, model: str, source: str, output: Path, core: int | None,
            quantize: bool = False) -> tuple:
    """Wall s, CPU s and peak RSS (MB) of one whole parse (``quantize``: with ``--quantize``)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [sys.executable, __file__, "--child", lever, "--", "parse", "-m", model, source, "-o", str(output),
               "--threads", "1", "--quiet", *(["--quantize"] if quantize else [])]
    if core is not None and shutil.which("taskset"):
        command = ["taskset", "-c", str(core), *command]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, after.ru_maxrss / 1024  # the largest child's so far: runs go smallest first, see main


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[4:]))
    if len(sys.argv) > 2 and sys.argv[1] == "--measure":
        tree, lever, model, source, output, core, quantize = sys.argv[2:9]
        print(json.dumps(one_run(Path(tree) if tree else None, lever, model, source, Path(output), int(core),
                                 quantize == "1")))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input")
    parser.add_argument("--model", required=True)
    parser.add_argument("--trees", nargs="*", default=[], help="kgparser trees (default: the installed one)")
    parser.add_argument("--levers", nargs="*", default=["none"], help=f"{', '.join(LEVERS)} or slack-N")
    parser.add_argument("--quantize", action="store_true", help="the last tree parses with --quantize")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--core", type=int, default=1)
    args = parser.parse_args()
    for lever in args.levers:
        if lever not in LEVERS and not (lever.startswith("slack-") and lever[6:].isdigit()):
            parser.error(f"--levers: unknown lever {lever!r}")
    trees: list[Path | None] = [Path(t).resolve() for t in args.trees] or [None]
    cases = [(tree, lever) for tree in trees for lever in (args.levers if tree == trees[-1] else ["none"])]
    results: dict = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as scratch:
        outputs = {case: Path(scratch) / f"{k}.conllu" for k, case in enumerate(cases)}
        for _ in range(args.rounds):
            for case in cases:
                # peak RSS of children is a high-water mark: a fresh process per measurement keeps it its own
                results[case].append(measured(case, args, outputs[case], trees[-1]))
        reference = outputs[cases[0]].read_bytes()
        print("| tree | lever off | wall s | CPU s | peak RSS MB | output |")
        print("|---|---|---|---|---|---|")
        for case in cases:
            walls, cpus, peaks = zip(*results[case])
            same = "identical" if outputs[case].read_bytes() == reference else "DIFFERS"
            print(f"| {case[0] or 'installed'} | {case[1]} | {statistics.median(walls):.2f} ({min(walls):.2f}) | "
                  f"{statistics.median(cpus):.2f} ({min(cpus):.2f}) | {statistics.median(peaks):.0f} | {same} |")


def measured(case: tuple, args: argparse.Namespace, output: Path, last: Path | None) -> tuple:
    """One run of ``case`` from a process of its own, whose children's peak RSS is then this run's alone."""
    tree, lever = case
    quantize = args.quantize and tree == last and lever != "int8"
    command = [sys.executable, __file__, "--measure", str(tree or ""), lever, args.model, args.input, str(output),
               str(args.core), "1" if quantize else "0"]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
