#!/bin/bash
# Same behaviour before and after a refactoring (issue 38): train three small models of the shipped
# recipes with the code of CODE (a checkout of kgparser), parse UD English-EWT dev + test with them,
# and keep the metrics and the parses under OUT; then compare two OUT folders with
#   experiments/same_behaviour.sh compare OUT_OLD OUT_NEW
# The models: the fast recipe (configs/ewt-best.yaml, 2 epochs, parsing untagged text with its own
# tagger), its gold-tag form (tag_input: gold, no tagger, 1 epoch, parsing gold-tagged text) and
# arc-eager with the root at the end (configs/arc-eager-dynamic.yaml, 1 epoch) parsing with the span
# and arc constraints of experiments/constraints_demo.py (gold flat spans, 10% of the gold arcs).
#   experiments/same_behaviour.sh run CODE OUT [MODELS_FROM]
# MODELS_FROM: parse with the checkpoints of an earlier OUT instead of this run's own.
set -euo pipefail
UD=${UD:-$(cd "$(dirname "$0")/../.." && pwd)/shared/ud/UD_English-EWT}
PY=${PY:-python}
if [ "$1" = compare ]; then
  status=0
  for f in fast.metrics gold.metrics eager.metrics; do
    cmp -s "$2/$f" "$3/$f" && echo "same: $f" || { echo "DIFFERENT: $f"; status=1; }
  done
  for f in fast.conllu gold.conllu eager.conllu; do
    cmp -s "$2/$f" "$3/$f" && echo "byte-identical: $f" || { echo "DIFFERENT: $f"; status=1; }
  done
  exit $status
fi
CODE=$(cd "$2" && pwd); mkdir -p "$3"; OUT=$(cd "$3" && pwd); MODELS=${4:-$OUT}
K="env PYTHONPATH=$CODE $PY -m kgparser"
cd "$CODE"
cat "$UD/en_ewt-ud-dev.conllu" "$UD/en_ewt-ud-test.conllu" > "$OUT/devtest.conllu"
$PY experiments/jackknife_tags.py untag "$OUT/devtest.conllu" "$OUT/devtest-untagged.conllu"
env PYTHONPATH="$CODE" $PY - "$OUT/devtest.conllu" "$OUT/constraints.jsonl" <<'PYEOF'
import json, random, sys
sys.path.insert(0, "experiments")
from constraints_demo import gold_constraints
from kgparser.io.conllu import read_conllu
rng = random.Random(1)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for s in read_conllu(sys.argv[1]):
        c = gold_constraints(s, rng, 0.1)
        if c["arcs"] or c["spans"]:
            out.write(json.dumps({"sent_id": s.sent_id, **c}) + "\n")
PYEOF
train() {  # name config epochs settings...
  local name=$1 config=$2 epochs=$3; shift 3
  if [ "$MODELS" = "$OUT" ]; then
    $K train "$config" --quiet --set seed=1 --set output_dir="$OUT/$name" --set training.epochs=$epochs \
      --set training.tensorboard=false "$@"
    # everything but the clock: loss, counts, dev and test scores
    $PY -c "import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(json.dumps({k: v for k, v in r.items() if not any(t in k for t in ('second', 'tok', 'time', 'cpu', 'wall'))}, sort_keys=True))" \
      "$OUT/$name/metrics.jsonl" > "$OUT/$name.metrics"
  fi
}
train fast configs/ewt-best.yaml 2
train gold configs/ewt-best.yaml 1 --set model.tag_input=gold --set model.tagger.upos=false \
  --set model.tagger.xpos=false --set model.tagger.feats=false
train eager configs/arc-eager-dynamic.yaml 1 --set system.options.root=end
$K parse -m "$MODELS/fast/best.pt" "$OUT/devtest-untagged.conllu" -o "$OUT/fast.conllu" --quiet
$K parse -m "$MODELS/gold/best.pt" "$OUT/devtest.conllu" -o "$OUT/gold.conllu" --quiet
$K parse -m "$MODELS/eager/best.pt" "$OUT/devtest.conllu" -o "$OUT/eager.conllu" --quiet \
  --constraints "$OUT/constraints.jsonl" --on-bad-constraints skip 2> "$OUT/eager.stderr"
