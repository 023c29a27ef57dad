"""Put a learned tokenizer into a checkpoint trained without one
(``tokenizer.enabled: false``), as ``kgparser train`` stores it: the weights in
``model.tokenizer``, its settings in ``model.config.tokenizer`` with ``enabled: true``.

The tokenizer is trained before the parser, from the training file's text and the
run's seed alone (kgparser/training/front_end.py), so the tokenizer of a run with
the same training file, seed and ``tokenizer`` block is the one this run would
have trained: this saves retraining it for every recipe of a treebank
(docs/history/model-tokenizer.md).  SOURCE is such a run's checkpoint, or a
tokenizer saved by ``experiments/tokenizer_study.py --save``.

    python experiments/add_tokenizer.py CHECKPOINT SOURCE OUT.pt
"""
import argparse

import torch

from kgparser.model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

WEIGHTS = ("characters", "weights", "multiword")


def tokenizer_of(source: str) -> tuple[dict, dict]:
    """(settings, weights) of the tokenizer in a checkpoint or a study's saved file."""
    try:
        data = load_checkpoint(source)
    except CheckpointError:  # not a checkpoint: a study's file
        saved = torch.load(source, weights_only=True)
        return {key: value for key, value in saved["config"].items() if key != "seed"}, \
            {key: saved[key] for key in WEIGHTS}
    if "tokenizer" not in data["model"]:
        raise SystemExit(f"{source}: this checkpoint has no tokenizer")
    return dict(data["model"]["config"]["tokenizer"]), data["model"]["tokenizer"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("source", help="a checkpoint with a tokenizer, or a tokenizer_study.py --save file")
    parser.add_argument("out", help="the new checkpoint (never the old one's path)")
    args = parser.parse_args()
    if args.out == args.checkpoint:
        parser.error("OUT must not be CHECKPOINT")
    data = load_checkpoint(args.checkpoint)
    settings, weights = tokenizer_of(args.source)
    data["model"]["config"]["tokenizer"].update(settings, enabled=True)
    data["model"]["tokenizer"] = weights
    save_checkpoint(data, args.out)


if __name__ == "__main__":
    main()
