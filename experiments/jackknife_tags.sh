#!/bin/bash
# A pipeline parser trained on jackknifed tags, against the joint model (docs/history/hungarian-without-gold-tags.md,
# "Hungarian-Szeged without gold tags", session 22).
#
#   experiments/jackknife_tags.sh folds      # K taggers (the recipe, each on K-1 folds) tag the held-out fold
#   experiments/jackknife_tags.sh parser     # the gold-input parser trained on the jackknifed tags
#   experiments/jackknife_tags.sh test       # it parses the test file tagged by TAGGER; scored against JOINT
#
# Settings (environment variables, with defaults):
#   UD=../shared/ud/UD_Hungarian-Szeged  CONFIG=configs/hu-best.yaml  K=5  SEED=1
#   WORK=../jackknife-hu   TAGGER=runs/hu-best-s1/best.pt (tags dev and test; also the joint model)
#   KGPARSER=kgparser
set -euo pipefail
UD=${UD:-../shared/ud/UD_Hungarian-Szeged}
CONFIG=${CONFIG:-configs/hu-best.yaml}
K=${K:-5}
SEED=${SEED:-1}
WORK=${WORK:-../jackknife-hu}
TAGGER=${TAGGER:-runs/hu-best-s1/best.pt}
KGPARSER=${KGPARSER:-kgparser}
HERE=$(cd "$(dirname "$0")" && pwd)
TRAIN=$(ls "$UD"/*-ud-train.conllu)
DEV=$(ls "$UD"/*-ud-dev.conllu)
TEST=$(ls "$UD"/*-ud-test.conllu)
NO_TAGGER=(--set model.tag_input=gold --set model.tagger.upos=false --set model.tagger.xpos=false
           --set model.tagger.feats=false)

folds() {
    python3 "$HERE/jackknife_tags.py" split "$TRAIN" "$K" "$WORK"
    for k in $(seq 0 $((K - 1))); do
        [ -f "$WORK/fold$k.pred.conllu" ] && continue
        $KGPARSER train "$CONFIG" --quiet --set seed="$SEED" --set data.train="$WORK/fold$k.train.conllu" \
            --set data.dev="$DEV" --set data.test=null --set output_dir="$WORK/tagger$k"
        $KGPARSER parse -m "$WORK/tagger$k/best.pt" "$WORK/fold$k.heldout.conllu" -o "$WORK/fold$k.pred.conllu"
    done
    local gold=() pred="$WORK/folds.pred.conllu"
    for k in $(seq 0 $((K - 1))); do gold+=("$WORK/fold$k.heldout.conllu"); done
    cat "${gold[@]/heldout/pred}" > "$pred"
    python3 "$HERE/jackknife_tags.py" merge "${gold[@]}" "$pred" "$WORK/train.jackknifed.conllu"
}

parser() {
    for split in dev test; do
        local gold=$DEV
        [ $split = test ] && gold=$TEST
        python3 "$HERE/jackknife_tags.py" untag "$gold" "$WORK/$split.untagged.conllu"
        $KGPARSER parse -m "$TAGGER" "$WORK/$split.untagged.conllu" -o "$WORK/$split.joint.conllu"
        python3 "$HERE/jackknife_tags.py" merge "$gold" "$WORK/$split.joint.conllu" "$WORK/$split.tagged.conllu"
    done
    $KGPARSER train "$CONFIG" --quiet --set seed="$SEED" "${NO_TAGGER[@]}" \
        --set data.train="$WORK/train.jackknifed.conllu" --set data.dev="$WORK/dev.tagged.conllu" \
        --set data.test=null --set output_dir="$WORK/parser"
}

test_() {
    $KGPARSER parse -m "$WORK/parser/best.pt" "$WORK/test.tagged.conllu" --tags input -o "$WORK/test.pipeline.conllu"
    $KGPARSER evaluate "$TEST" "$WORK/test.joint.conllu" --against "$WORK/test.pipeline.conllu"
}

case "${1:-}" in
    folds|parser) "$1" ;;
    test) test_ ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
esac
