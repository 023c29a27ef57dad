#!/usr/bin/env bash
# Side-by-side speed and accuracy of spaCy 3.8's dependency parser and kgparser
# on an UNTAGGED UD treebank (no gold UPOS/XPOS/FEATS at parse time; English-EWT
# unless UD names another).
#
# spaCy is installed in its own virtual environment (never in kgparser's .venv),
# trained as a parser-only CPU pipeline (`spacy init config --pipeline parser
# --optimize efficiency`) on the train file with the tag columns blanked, and both
# parsers then parse dev+test (about 50,000 words for EWT, tags blanked, gold
# tokenization and sentence segmentation) as whole processes on one thread.
# kgparser scores both outputs, and each parser's parse of the test file alone.
# Everything is written under $WORK.
#
#   experiments/bench_spacy.sh setup          # $WORK/venv with spacy==3.8.* (needs PyPI)
#   experiments/bench_spacy.sh data           # train/dev .spacy, devtest.conllu, devtest.gold.conllu
#   experiments/bench_spacy.sh train          # one thread, niced; keeps $WORK/model/model-best
#   experiments/bench_spacy.sh parse [MODEL]  # times spaCy (and kgparser with checkpoint MODEL,
#                                             # e.g. runs/ewt-best/best.pt) REPEATS times, scores
#                                             # both and prints a table; no MODEL: spaCy only
#   experiments/bench_spacy.sh raw [MODEL[:ENCODER]...]   # from raw text (below)
#
# From raw text (PIPELINE=morphologizer,parser): spaCy's whole pipeline, its
# tokenizer, its parser's sentence boundaries and its morphologizer's UPOS and
# FEATS, trained on the treebank WITH its tags (as kgparser's tagger is).
# `raw` writes the gold test file's text (kgparser.io.rawtext.text_of: what
# `kgparser parse --input-format raw` reads) to $WORK/raw/test.txt, parses it
# with spaCy (spacy_conllu.py parse-raw) and with each kgparser checkpoint
# MODEL (--input-format raw; :ENCODER is its --encoder), parses the test
# file's gold words (tags and tree blanked) with each of them too, scores all
# with `kgparser evaluate` (the CoNLL 2018 alignment where words differ) and
# prints a table of every parse in $WORK/raw. kgparser parses are kept in
# $WORK/raw/NAME.raw.conllu and NAME.conllu (NAME: the checkpoint's folder)
# and made again only where older than the checkpoint; spaCy's are made
# every time.
#
#   export WORK=../spacy-raw-hu UD=../shared/ud/UD_Hungarian-Szeged PIPELINE=morphologizer,parser N_SENTS=10
#   experiments/bench_spacy.sh data && experiments/bench_spacy.sh train
#   experiments/bench_spacy.sh raw runs/hu-best-s1/best.pt runs/hu-acc-s1/best.pt:../e5-hf
#
# `train` runs in the foreground and logs to $WORK/train.log; for the full run
# start it with nohup.  Settings (environment variables, with defaults):
#   UD=../shared/ud/UD_English-EWT   WORK=../spacy-bench   REPEATS=3
#   PY=$WORK/venv/bin/python   the python with spaCy (`setup` makes that one; any other,
#       such as kgparser's .venv with the kgparser[spacy] extra, is used as it is)
#   PIPELINE=parser   spaCy's components (`spacy init config --pipeline`); with a
#       morphologizer or tagger in it, `data` keeps the tag columns of train and dev
#   KGPY=$REPO/.venv/bin/python   kgparser's python (`raw`: the test file's text)
#   SPACY_LANG=   spaCy's language code (default: the treebank's, e.g. en of en_ewt-ud-*.conllu)
#   MAX_EPOCHS=8   MAX_STEPS=0 (no limit)  PATIENCE=1600  EVAL_FREQ=200   (spacy train budget:
#       8 epochs = 3000 steps took 19 min wall, 14 min CPU on the 2-core machine busy with
#       three other trainings; dev LAS was still rising: raise MAX_EPOCHS if time allows)
#   N_SENTS=1      sentences per training and dev Doc (spacy convert -n); with 1 the parser
#       never sees a sentence boundary inside a Doc: for raw text use 10
#   KG_BATCH=64    kgparser parse --batch-size
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
UD=${UD:-$REPO/../shared/ud/UD_English-EWT}
PREFIX=$(basename "$(ls "$UD"/*-ud-train.conllu)" -train.conllu)   # e.g. en_ewt-ud
SPACY_LANG=${SPACY_LANG:-${PREFIX%%_*}}
WORK=${WORK:-$(cd "$REPO/.." && pwd)/spacy-bench}
KGPARSER=${KGPARSER:-$REPO/.venv/bin/kgparser}
KGPY=${KGPY:-$REPO/.venv/bin/python}
HELPER=$REPO/experiments/spacy_conllu.py
PY=${PY:-$WORK/venv/bin/python}
PIPELINE=${PIPELINE:-parser}
REPEATS=${REPEATS:-3}

# One thread for both parsers: numpy/blis (spaCy's thinc) and torch (kgparser).
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1

setup() {
    [ "$PY" = "$WORK/venv/bin/python" ] || { echo "PY=$PY: no venv to set up"; "$PY" -c 'import spacy; print("spaCy", spacy.__version__)'; return; }
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install 'spacy==3.8.*'
    "$PY" -c 'import spacy; print("spaCy", spacy.__version__)'
}

words_in() {   # syntactic words of a CoNLL-U file (integer IDs only)
    awk -F'\t' '$1 ~ /^[0-9]+$/ {n++} END {print n}' "$1"
}

data() {
    mkdir -p "$WORK"
    case ",$PIPELINE," in
        *,morphologizer,*|*,tagger,*)   # the pipeline learns its own tags from them
            cat "$UD/$PREFIX-train.conllu" > "$WORK/train.conllu"
            cat "$UD/$PREFIX-dev.conllu" > "$WORK/dev.conllu" ;;
        *)  # Training data with UPOS/XPOS/FEATS blanked: a parser-only pipeline does not
            # read them, but then nobody has to take that on trust.
            "$PY" "$HELPER" strip "$UD/$PREFIX-train.conllu" "$WORK/train.conllu"
            "$PY" "$HELPER" strip "$UD/$PREFIX-dev.conllu" "$WORK/dev.conllu" ;;
    esac
    for split in train dev; do
        "$PY" -m spacy convert "$WORK/$split.conllu" "$WORK" --converter conllu -n "${N_SENTS:-1}"
    done
    # The benchmark text: dev + test, gold for scoring, and the parsers' input
    # with the tags and the gold tree (HEAD, DEPREL, DEPS) blanked.
    cat "$UD/$PREFIX-dev.conllu" "$UD/$PREFIX-test.conllu" > "$WORK/devtest.gold.conllu"
    "$PY" "$HELPER" strip --tree "$WORK/devtest.gold.conllu" "$WORK/devtest.conllu"
    "$PY" "$HELPER" strip --tree "$UD/$PREFIX-test.conllu" "$WORK/test.conllu"   # scored alone
    echo "devtest: $(words_in "$WORK/devtest.conllu") words"
}

train() {
    mkdir -p "$WORK"
    [ -f "$WORK/config.cfg" ] ||
        "$PY" -m spacy init config --lang "$SPACY_LANG" --pipeline "$PIPELINE" --optimize efficiency "$WORK/config.cfg"
    uptime | tee "$WORK/train.uptime"
    # `time` reports the whole training; spacy train prints its per-evaluation table.
    # With the kernel's autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled),
    # `nice` only ranks processes of one session against each other, so training
    # gets a session of its own whose weight is lowered as well: it then takes
    # about one nice-5 process's share of a machine busy with other training.
    # (In that session Ctrl-C does not reach it: stop it by its pid.)
    { time setsid -w bash -c 'echo 5 > /proc/self/autogroup 2> /dev/null || true; exec nice -n 5 "$@"' \
        niced "$PY" -m spacy train "$WORK/config.cfg" --output "$WORK/model" --gpu-id -1 \
        --paths.train "$WORK/train.spacy" --paths.dev "$WORK/dev.spacy" \
        --training.max_epochs "${MAX_EPOCHS:-8}" --training.max_steps "${MAX_STEPS:-0}" \
        --training.patience "${PATIENCE:-1600}" --training.eval_frequency "${EVAL_FREQ:-200}" ; } \
        2>&1 | tee "$WORK/train.log"
    uptime | tee -a "$WORK/train.uptime"
}

# timed NAME CMD...: runs CMD REPEATS times under /usr/bin/time; appends
# "wall user+sys" per run to $WORK/parse/NAME.times (the table takes the best).
timed() {
    local name=$1 i
    shift
    : > "$WORK/parse/$name.times"
    for ((i = 1; i <= REPEATS; i++)); do
        if ! /usr/bin/time -f '%e %U %S' -o "$WORK/parse/$name.time" "$@" 2> "$WORK/parse/$name.stderr"; then
            cat "$WORK/parse/$name.stderr" >&2
            exit 1
        fi
        awk '{printf "%s %.2f\n", $1, $2 + $3}' "$WORK/parse/$name.time" >> "$WORK/parse/$name.times"
        echo "$name run $i: $(tail -1 "$WORK/parse/$name.times") (wall s, CPU s); $(grep -h 'words/s' "$WORK/parse/$name.stderr" | tail -1)"
    done
}

parse() {
    local model=${1:-} words
    mkdir -p "$WORK/parse"
    words=$(words_in "$WORK/devtest.conllu")
    uptime | tee "$WORK/parse/uptime"
    timed spacy "$PY" "$HELPER" parse "$WORK/model/model-best" "$WORK/devtest.conllu" "$WORK/parse/spacy.conllu"
    "$KGPARSER" evaluate --json "$WORK/devtest.gold.conllu" "$WORK/parse/spacy.conllu" > "$WORK/parse/spacy.json"
    if [ -n "$model" ]; then
        timed kgparser "$KGPARSER" parse -m "$model" --threads 1 --batch-size "${KG_BATCH:-64}" \
            "$WORK/devtest.conllu" -o "$WORK/parse/kgparser.conllu"
        "$KGPARSER" evaluate --json "$WORK/devtest.gold.conllu" "$WORK/parse/kgparser.conllu" > "$WORK/parse/kgparser.json"
    else
        rm -f "$WORK/parse/kgparser.times" "$WORK/parse/kgparser.json"
        echo "no kgparser MODEL given: kgparser skipped (bench_spacy.sh parse path/to/best.pt)"
    fi
    uptime | tee -a "$WORK/parse/uptime"
    # the test file alone (untimed): the accuracy figures of docs/results.md
    "$PY" "$HELPER" parse "$WORK/model/model-best" "$WORK/test.conllu" "$WORK/parse/spacy-test.conllu" 2> /dev/null
    echo "spacy, test alone: $("$KGPARSER" evaluate "$UD/$PREFIX-test.conllu" "$WORK/parse/spacy-test.conllu" | head -3 | tr '\n' ' ')"
    if [ -n "$model" ]; then
        "$KGPARSER" parse -m "$model" --threads 1 "$WORK/test.conllu" -o "$WORK/parse/kgparser-test.conllu" 2> /dev/null
        echo "kgparser, test alone: $("$KGPARSER" evaluate "$UD/$PREFIX-test.conllu" "$WORK/parse/kgparser-test.conllu" | head -3 | tr '\n' ' ')"
    fi
    "$PY" - "$WORK/parse" "$words" "$model" <<'EOF'
import json, os, sys
d, words, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = {}
print(f"best of the runs in {d}/*.times (wall and CPU minimised separately);"
      " kgparser evaluate: punctuation scored, LAS with full labels (subtypes)")
print("| parser | words | wall s | CPU s | words/wall s | words/CPU s | UAS | LAS |")
print("|---|---|---|---|---|---|---|---|")
for name in ("spacy", "kgparser"):
    if not os.path.exists(f"{d}/{name}.times"):
        continue
    runs = [tuple(map(float, line.split())) for line in open(f"{d}/{name}.times")]
    wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
    s = json.load(open(f"{d}/{name}.json"))
    rows[name] = cpu
    print(f"| {name} | {words} | {wall:.1f} | {cpu:.1f} | {words / wall:.0f} | {words / cpu:.0f} "
          f"| {100 * s['uas']:.2f} | {100 * s['las']:.2f} |")
if len(rows) == 2:
    print(f"kgparser/spaCy speed (words per CPU second): {rows['spacy'] / rows['kgparser']:.2f}"
          f"  [kgparser model: {model}]")
EOF
}

raw() {
    local out=$WORK/raw arg model name enc
    local gold=$UD/$PREFIX-test.conllu
    mkdir -p "$out"
    # the gold test file's text, rewritten only when it changes
    "$KGPY" -c 'import sys; from kgparser.io.conllu import read_conllu; from kgparser.io.rawtext import text_of
sys.stdout.write(text_of(read_conllu(sys.argv[1])))' "$gold" > "$out/test.txt.new"
    if cmp -s "$out/test.txt.new" "$out/test.txt"; then rm "$out/test.txt.new"; else mv "$out/test.txt.new" "$out/test.txt"; fi
    [ -f "$WORK/test.conllu" ] || "$PY" "$HELPER" strip --tree "$gold" "$WORK/test.conllu"
    uptime | tee "$out/uptime"
    /usr/bin/time -f '%e s wall, %U s user' "$PY" "$HELPER" parse-raw "$WORK/model/model-best" "$out/test.txt" "$out/spacy.raw.conllu"
    /usr/bin/time -f '%e s wall, %U s user' "$PY" "$HELPER" parse "$WORK/model/model-best" "$WORK/test.conllu" "$out/spacy.conllu"
    for arg in "$@"; do
        model=${arg%%:*} enc=()
        [ "$model" = "$arg" ] || enc=(--encoder "${arg#*:}")
        name=$(basename "$(dirname "$model")")
        [ "$name" != spacy ] || { echo "raw: a kgparser model's folder may not be named spacy: $model" >&2; exit 2; }
        if [ "$out/$name.raw.conllu" -nt "$model" ]; then
            echo "$name: $out/$name.raw.conllu is newer than $model: kept"
        else
            /usr/bin/time -f '%e s wall, %U s user' "$KGPARSER" parse -m "$model" "${enc[@]}" --threads 1 \
                --input-format raw "$out/test.txt" -o "$out/$name.raw.conllu"
        fi
        if [ "$out/$name.conllu" -nt "$model" ]; then
            echo "$name: $out/$name.conllu is newer than $model: kept"
        else
            /usr/bin/time -f '%e s wall, %U s user' "$KGPARSER" parse -m "$model" "${enc[@]}" --threads 1 \
                "$WORK/test.conllu" -o "$out/$name.conllu"
        fi
    done
    for name in $(cd "$out" && ls *.raw.conllu | sed 's/\.raw\.conllu$//'); do
        "$KGPARSER" evaluate "$gold" "$out/$name.raw.conllu" > "$out/$name.raw.eval"
        "$KGPARSER" evaluate --json "$gold" "$out/$name.raw.conllu" > "$out/$name.raw.json"
        [ ! -f "$out/$name.conllu" ] || "$KGPARSER" evaluate --json "$gold" "$out/$name.conllu" > "$out/$name.json"
    done
    "$PY" - "$out" "$PREFIX" <<'EOF'
import glob, json, os, sys
d, prefix = sys.argv[1], sys.argv[2]
print(f"{prefix} test from raw text ({d}/test.txt): F1 of kgparser evaluate (CoNLL 2018 alignment,"
      " LAS with full labels); gold words: the test file's words and sentences, tags blanked")
print("| parser | Tokens | Sentences | Words | UPOS | UAS | LAS | gold words: LAS | UPOS |")
print("|---|---|---|---|---|---|---|---|---|")
names = sorted(os.path.basename(p)[:-len(".raw.json")] for p in glob.glob(f"{d}/*.raw.json"))
for name in sorted(names, key=lambda n: n == "spacy"):
    r = json.load(open(f"{d}/{name}.raw.json"))
    g = json.load(open(f"{d}/{name}.json")) if os.path.exists(f"{d}/{name}.json") else {}
    raw = " | ".join(f"{100 * r[k]['f1']:.2f}" for k in ("tokens", "sentences", "words", "upos", "uas", "las"))
    gold = " | ".join(f"{100 * g[k]:.2f}" if g.get(k) is not None else "–" for k in ("las", "upos"))
    print(f"| {name} | {raw} | {gold} |")
EOF
}

case "${1:-}" in
    setup|data|train) "$1" ;;
    parse) parse "${2:-}" ;;
    raw) shift; raw "$@" ;;
    *) sed -n '2,54p' "$0"; exit 2 ;;
esac
