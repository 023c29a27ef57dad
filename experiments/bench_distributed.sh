#!/usr/bin/env bash
# Data-parallel scaling on one machine: the same config trained by 1 and by N
# processes (torchrun --standalone through `kgparser train --nproc`), same epochs;
# prints tokens/s (summed over processes, per wall second), the per-process
# rate (tokens per CPU second) and dev LAS per epoch from each run's metrics.jsonl.
#
#   experiments/bench_distributed.sh [CONFIG] [EPOCHS] [N] [OUT]
#   (default: configs/arc-hybrid-dynamic.yaml on UD English-EWT, 10 epochs, 2 processes)
#   SETS="--set KEY=VALUE ..." adds overrides to both runs (e.g. the gold-tag model of
#   docs/history/data-parallel-training.md: SETS="--set model.tag_input=gold --set model.tagger.upos=false ...")
#
# Run it on a quiet machine: other load changes the wall-clock rates.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-configs/arc-hybrid-dynamic.yaml}
EPOCHS=${2:-10}
N=${3:-2}
OUT=${4:-runs/bench-distributed}
KG=${KG:-.venv/bin/kgparser}
read -r -a EXTRA <<< "${SETS:-}"

for nproc in 1 "$N"; do
    "$KG" train "$CONFIG" --nproc "$nproc" --overwrite --quiet \
        --set "output_dir=$OUT/nproc=$nproc" --set "training.epochs=$EPOCHS" \
        --set threads=1 --set training.tensorboard=false "${EXTRA[@]}"
done

.venv/bin/python - "$OUT" 1 "$N" <<'EOF'
import json, sys
from pathlib import Path

out, counts = Path(sys.argv[1]), sys.argv[2:]
runs = {n: [json.loads(l) for l in (out / f"nproc={n}" / "metrics.jsonl").read_text().splitlines()] for n in counts}
print(f"{'processes':>9} {'tok/s':>8} {'tok/CPU s':>10} {'s/epoch':>8} {'dev LAS by epoch'}")
for n, records in runs.items():
    epochs = [r for r in records if "epoch" in r]
    mean = lambda key: sum(r[key] for r in epochs) / len(epochs)
    print(f"{n:>9} {mean('tokens_per_second'):8.0f} {mean('tokens_per_cpu_second'):10.0f} "
          f"{mean('epoch_seconds'):8.1f} " + " ".join(f"{100 * r['dev_las']:.2f}" for r in epochs))
first, last = (runs[n] for n in counts)
speed = lambda records: sum(r["tokens_per_second"] for r in records if "epoch" in r)
print(f"speed-up {speed(last) / speed(first):.2f}x; dev LAS after the last epoch: "
      f"{100 * [r for r in first if 'epoch' in r][-1]['dev_las']:.2f} (1) vs "
      f"{100 * [r for r in last if 'epoch' in r][-1]['dev_las']:.2f} ({counts[-1]})")
EOF
