# Sourced by experiments/device_*.sh on a lent GPU machine (no registry there):
# installs DATA's wheels (what the machine lacks: conllu) and unpacks DATA's
# compact encoder (experiments/compact_encoder.py pack) to where the accurate
# recipes look for it, embeddings/multilingual-e5-small.  Expects DATA set.
python3 -m pip install -q --no-index --no-deps --target /tmp/site "$DATA"/wheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
python3 experiments/compact_encoder.py unpack "$DATA/encoder" embeddings/multilingual-e5-small || exit 1
nproc; nvidia-smi -L 2>/dev/null
