"""A Hugging Face encoder folder made small enough to travel to a lent GPU
machine (64 MiB per call), exact for the treebanks it is made for.

    python experiments/compact_encoder.py pack ENCODER_DIR OUT_DIR TREEBANK.conllu[.gz] ...
    python experiments/compact_encoder.py unpack OUT_DIR ENCODER_DIR

``pack`` sets to zero every row of the token-embedding table that no word of
the given CoNLL-U files tokenizes to (multilingual-e5-small: 13,405 of 250,037
rows are used by Hungarian-Szeged and Turkish-IMST), keeps the vocabulary, the
tokenizer and the transformer layers as they are, and xz-compresses the weights
and the tokenizer (470 MB and 17 MB -> 24 MB and 2 MB).  The transformer's
states of those treebanks' sentences are therefore those of the whole model,
bit for bit: ``pack`` checks this on the first sentences of each file.  A
checkpoint trained on the compact copy names a different weight fingerprint
(``kgparser parse --encoder``: "different encoder"), so parse where you trained.
``unpack`` writes a loadable folder back.  Used by experiments/device_*.sh.
"""
from __future__ import annotations

import argparse
import lzma
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kgparser.io.atomic import atomic_path  # noqa: E402
from kgparser.io.conllu import read_conllu  # noqa: E402

WEIGHTS, TOKENIZER = "model.safetensors", "tokenizer.json"  # compressed; the folder's other files are copied
TABLE = "embeddings.word_embeddings.weight"
CHECKED = 32  # sentences per file whose states pack compares


def used_ids(tokenizer, sentences: list[list[str]]) -> set[int]:
    """The token ids of the sentences' words, in context and alone, with the special tokens."""
    ids = set(tokenizer.all_special_ids)
    for start in range(0, len(sentences), 256):
        for row in tokenizer(sentences[start:start + 256], is_split_into_words=True)["input_ids"]:
            ids.update(row)
    for row in tokenizer(sorted({w for s in sentences for w in s}), add_special_tokens=False)["input_ids"]:
        ids.update(row)
    return ids


def pack(encoder: Path, out: Path, treebanks: list[str]) -> None:
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(encoder)
    files = [[list(s.forms) for s in read_conllu(path, require_tree=False)] for path in treebanks]
    used = used_ids(tokenizer, [s for sentences in files for s in sentences])
    weights = load_file(encoder / WEIGHTS)
    table = weights[TABLE]
    unused = torch.ones(table.shape[0], dtype=torch.bool)
    unused[sorted(used)] = False
    table[unused] = 0
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / WEIGHTS) as temporary:
        save_file(weights, str(temporary), metadata={"format": "pt"})
    for path in encoder.iterdir():
        if path.is_file() and path.name != WEIGHTS:
            with atomic_path(out / path.name) as temporary:
                shutil.copyfile(path, temporary)
    check(encoder, out, [sentences[:CHECKED] for sentences in files])
    for name in (WEIGHTS, TOKENIZER):
        with (out / name).open("rb") as source, atomic_path(out / f"{name}.xz") as temporary:
            with lzma.open(temporary, "wb", preset=6) as target:
                shutil.copyfileobj(source, target, 1 << 24)
        (out / name).unlink()
    print(f"{out}: {len(used):,} of {table.shape[0]:,} embedding rows kept; "
          f"{sum(f.stat().st_size for f in out.iterdir()) / 2**20:.1f} MiB")


def check(encoder: Path, compact: Path, samples: list[list[list[str]]]) -> None:
    """Stop unless both folders give the same last-layer states for the samples."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(encoder)
    models = [AutoModel.from_pretrained(path).eval() for path in (encoder, compact)]
    for sentences in samples:
        batch = tokenizer(sentences, is_split_into_words=True, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            full, small = (model(**batch).last_hidden_state for model in models)
        if not torch.equal(full, small):
            sys.exit(f"compact_encoder.py: {compact}: states differ from {encoder}'s "
                     f"(largest difference {(full - small).abs().max():.3g})")


def unpack(compact: Path, encoder: Path) -> None:
    encoder.mkdir(parents=True, exist_ok=True)
    for path in compact.iterdir():
        with atomic_path(encoder / path.name.removesuffix(".xz")) as temporary:
            if path.suffix == ".xz":
                with lzma.open(path) as source, temporary.open("wb") as target:
                    shutil.copyfileobj(source, target, 1 << 24)
            else:
                shutil.copyfile(path, temporary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="zero the unused embedding rows and compress")
    packing.add_argument("encoder", type=Path)
    packing.add_argument("out", type=Path)
    packing.add_argument("treebanks", nargs="+")
    unpacking = commands.add_parser("unpack", help="write a loadable folder from a packed one")
    unpacking.add_argument("compact", type=Path)
    unpacking.add_argument("encoder", type=Path)
    args = parser.parse_args()
    if args.command == "pack":
        pack(args.encoder, args.out, args.treebanks)
    else:
        unpack(args.compact, args.encoder)


if __name__ == "__main__":
    main()
