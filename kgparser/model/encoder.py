"""A frozen pretrained transformer encoder under the BiLSTM: the states of every
word of a sentence, read through Hugging Face ``transformers`` (the optional
extra ``kgparser[transformers]``).

:meth:`Encoder.word_states` gives, per sentence of ``n`` words, a tensor
``[n + 1, S, H]``: row 0 (ROOT) is the state of the tokenizer's leading special
token (``[CLS]``, ``<s>``; zeros for a tokenizer without one), row ``w`` the
pooled states of word ``w``'s subwords; the ``S`` states are the embedding
output and the output of each transformer layer run, which the network mixes
with learned weights (Peters et al. 2018, ELMo's scalar mix; Kondratyuk &
Straka 2019, UDify's layer attention: :mod:`kgparser.model.mix`).  Tokens
come from the fast tokenizer on the words as given (``is_split_into_words``),
so every subword belongs to one word (``word_ids``).

* ``layers`` (config ``model.encoder.layers``): only the bottom N layers are
  kept and run (the middle layers carry the most syntax, and the top ones
  cost time); ``0`` keeps the token-embedding table alone: each subword's
  vector is a lookup, with no position and no transformer run, read in place
  from a local folder's safetensors file (:mod:`kgparser.model.token_table`)
  without loading the model.
* Pooling: the ``mean`` or the ``first`` of a word's subwords, leaving out a
  bare word-boundary piece (SentencePiece's lone ``▁``, byte-level BPE's
  ``Ġ``) unless the word has nothing else: it says where a word starts, not
  what it is.
* A word the tokenizer drops entirely (empty after its normalisation, e.g. a
  zero-width space) is read as the tokenizer's unknown token in its place,
  so it keeps a position in the context and gets a state like other words.
* Long sentences are encoded in windows of ``window`` subwords (by default as
  many as the model's positions allow) overlapping by ``overlap``; each
  subword takes its state from the window where it is most central, so none
  is cut off and each sees at least about ``overlap / 2`` subwords of context
  on every side that has them.  ROOT's state comes from the first window.

By default the encoder is frozen: no gradient reaches it, it runs in
evaluation mode (no dropout), so a sentence's states are a function of its
words, which :class:`~kgparser.model.inputs.Inputs` caches.  Frozen states
are returned in float16 (the cache holds many), always, so cached and fresh
states are equal.

With ``finetune`` (config ``model.encoder.finetune``) the transformer layers
train with the parser at their own learning rate, with the model's dropout in
training (fine-tuning as UDify does, Kondratyuk & Straka 2019, and SuPar's
BERT embedding): :class:`~kgparser.model.Model` makes the transformer
part of its network, so the trainer's optimizer, weight average, gradient
clipping and checkpoints take it in like any other layer, and its states
(float32, with gradients) are computed anew for every batch.  The
token-embedding table stays frozen: it is most of a multilingual model's
weights (366 of e5-small's 448 MB), and a word unseen in training keeps
pieces that agree with the trained ones.

A hub name is read from the Hugging Face cache where it is there; else it
is downloaded, unless offline mode is on (``HF_HUB_OFFLINE``) or one request
to the hub finds no answer within :data:`HUB_TIMEOUT` seconds: a machine
without internet gets one line at once, not a minute of retries.  A folder
whose safetensors weights are truncated or damaged is one error naming the
file.

A checkpoint names the encoder (its path or hub name) and stores its
:attr:`Encoder.fingerprint` (sha256 of the configuration, tokenizer and weight
files: :mod:`kgparser.model.fingerprint`, remembered while the files are
unchanged), not its weights, but for the fine-tuned layers: all except the
token-embedding table (:meth:`Encoder.frozen_table`).

A local folder is read without importing transformers where that gives the
same subwords and states (transformers' import and model loading are most of
a parse's start-up): its tokenizer with the ``tokenizers`` library where the
folder's tokenizer is the generic fast one (:mod:`kgparser.model.subwords`),
its configuration from ``config.json`` and a frozen BERT or XLM-R's layers
in plain torch from its safetensors weights, only the layers kept, the
token-embedding table read in place (:mod:`kgparser.model.bert`).
Transformers still loads every other encoder: hub names, other
architectures or tokenizers, fine-tuned layers.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from ..config import EncoderConfig
from ..errors import KgparserError
from .bert import PlainEncoder, plain_encoder, plain_shape
from .fingerprint import fingerprint
from .int8 import quantized
from .memory import release_free_memory
from .subwords import FolderTokenizer, folder_tokenizer
from .token_table import DamagedWeights, check_weights, token_table

#: word-start markers of SentencePiece and byte-level BPE, which are also pieces of their own
BOUNDARY_PIECES = ("▁", "Ġ")
#: padded subwords the transformer reads per call, by device type: on one CPU thread
#: small calls run fastest (EWT test: 1,500 words/s with 512, 1,050 with 4,096, the
#: same states; docs/history/encoder-levers-and-speed.md, "Parsing speed"), a GPU wants large ones
TOKENS_PER_CALL = {"cpu": 512, "cuda": 4096}
#: state storage type: half the memory of float32 for the training cache
STATE_DTYPE = torch.float16
#: seconds to wait for the Hugging Face hub's answer before an encoder counts as not downloadable
HUB_TIMEOUT = 10

__all__ = ["Encoder", "EncoderError", "EncoderNotFound", "fingerprint"]


class EncoderError(KgparserError):
    """The encoder cannot be loaded or used as configured."""


class EncoderNotFound(EncoderError):
    """No model is where the encoder's path or hub name points."""


_NEEDS_TRANSFORMERS = 'model.encoder: needs Hugging Face transformers: pip install "kgparser[transformers]"'


def _transformers():
    try:
        import transformers
    except ImportError:
        raise EncoderError(_NEEDS_TRANSFORMERS) from None
    return transformers


def _check_transformers() -> None:
    """Raise the error of :func:`_transformers` where transformers is not
    installed, without importing it (an encoder needs the extra whichever way
    it is read: it brings ``tokenizers`` and ``safetensors`` too)."""
    try:
        found = importlib.util.find_spec("transformers") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise EncoderError(_NEEDS_TRANSFORMERS)


class Encoder:
    """A frozen transformer giving per-word states (see the module docstring)."""

    def __init__(self, cfg: EncoderConfig):
        _check_transformers()
        path = cfg.path
        assert path is not None  # an encoder is made only where model.encoder.path is set
        self.name = path
        self.pooling = cfg.pooling
        #: trained with the parser (``model.encoder.finetune``), else frozen
        self.trainable = cfg.finetune
        local = Path(path).is_dir()
        if not local and Path(path).is_absolute():
            raise EncoderNotFound(f"model.encoder.path: {path}: no such folder")
        #: the tokenizer: read directly (:mod:`kgparser.model.subwords`) or transformers'
        self.tokenizer: Any = folder_tokenizer(Path(path)) if local else None
        if self.tokenizer is None:
            self.tokenizer = _loaded(_transformers().AutoTokenizer, path, local)
        if not self.tokenizer.is_fast:
            raise EncoderError(f"model.encoder.path: {path}: has no fast tokenizer (tokenizer.json), "
                               f"which aligns subwords with words")
        shape = plain_shape(_config_file(Path(path))) if local else None
        config = SimpleNamespace(**shape) if shape else _loaded(_transformers().AutoConfig, path, local)
        self.prefix, self.suffix = self._special_tokens()
        self.boundary_ids = self._boundary_ids()
        total = config.num_hidden_layers
        self.layers = total if cfg.layers is None else cfg.layers
        if self.layers > total:
            raise EncoderError(f"model.encoder.layers: {self.layers}: {path} has {total} layers")
        self.table, self.model = self._table_or_model(cfg, config, local, shape)
        # after the weights are loaded: a hub model's snapshot folder then holds them
        self.fingerprint = fingerprint(Path(path) if local else _snapshot_folder(path))
        self.n_states = 1 if self.layers == 0 else self.layers + 1
        self.dim = self.table.embedding_dim if self.table is not None else config.hidden_size
        self.window, self.overlap = self._windows(cfg, config)
        self.device = torch.device("cpu")

    def _table_or_model(self, cfg: EncoderConfig, config, local: bool, shape: dict | None) -> tuple:
        """``layers: 0``: the token-embedding table (read in place from a local
        folder's safetensors file, else from the loaded model) and no model;
        else no table and the model, prepared: in plain torch where
        :mod:`kgparser.model.bert` builds it, else loaded by transformers."""
        try:
            table = token_table(Path(self.name), config.vocab_size) if self.layers == 0 and local else None
            plain = plain_encoder(Path(self.name), shape, self.layers) \
                if shape and self.layers and not cfg.finetune else None
        except DamagedWeights as error:
            raise EncoderError(f"model.encoder.path: {error}") from None
        if table is not None:
            return table, None
        if plain is not None:
            return None, quantized(plain) if cfg.quantize else plain
        model = _loaded(_transformers().AutoModel, self.name, local)
        if self.layers == 0:
            return model.get_input_embeddings(), None
        return None, _prepared(model, self.layers, cfg.quantize and not cfg.finetune, cfg.finetune)

    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """The ids the tokenizer puts before and after a sentence's subwords."""
        ids, words = _split(self.tokenizer, ["a"], add_special_tokens=True)
        inside = [k for k, word in enumerate(words) if word is not None]
        return ids[:inside[0]], ids[inside[-1] + 1:]

    def _boundary_ids(self) -> set[int]:
        """The id of the bare word-start marker this tokenizer puts on words (none for WordPiece)."""
        first = self.tokenizer.convert_ids_to_tokens(self._tokenized(["word"])[0])[0]
        ids = [_piece_id(self.tokenizer, marker) for marker in BOUNDARY_PIECES if first.startswith(marker)]
        return {i for i in ids if i is not None}

    def _windows(self, cfg: EncoderConfig, config) -> tuple[int, int]:
        """Subwords per window and the overlap of consecutive windows."""
        specials = len(self.prefix) + len(self.suffix)
        limit = min(self.tokenizer.model_max_length, getattr(config, "max_position_embeddings", 512)) - specials
        window = limit if cfg.window is None else cfg.window
        if window > limit:
            raise EncoderError(f"model.encoder.window: {window}: {cfg.path} reads at most {limit} subwords "
                               f"(plus {specials} special tokens)")
        overlap = window // 2 if cfg.overlap is None else cfg.overlap
        if overlap >= window:
            raise EncoderError(f"model.encoder.overlap: must be < the window ({window} subwords), got {overlap}")
        return window, overlap

    def to(self, device: str | torch.device) -> Encoder:
        self.device = torch.device(device)
        for module in (self.model, self.table):
            if module is not None:
                module.to(self.device)
        return self

    def frozen_table(self) -> nn.Module:
        """The transformer's token-embedding table, which stays frozen and out of
        checkpoints also when its layers are fine-tuned."""
        return self.model.get_input_embeddings()

    # -- states ---------------------------------------------------------------------------

    def word_states(self, sentences: Sequence[Sequence[str]], mix: torch.Tensor | None = None) -> list[torch.Tensor]:
        """Per sentence of ``n`` words, its states ``[n + 1, S, H]`` (ROOT first),
        computed in batches of sentences of similar length: float16 on the CPU
        from a frozen encoder; float32 on the encoder's device, with gradients
        where they are enabled, from a fine-tuned one.  With ``mix`` (``[S]``
        weights of a transformer's states), their weighted sum ``[n + 1, 1, H]``,
        taken for each subword before the pooling
        (:meth:`~kgparser.model.mix.EncoderMix.layer_weights`)."""
        pieces = [self._pieces(words) for words in sentences]
        results: list = [None] * len(sentences)
        order = sorted(range(len(sentences)), key=lambda i: len(pieces[i][0]))
        with contextlib.nullcontext() if self.trainable else torch.no_grad():
            for batch in self._batches(order, pieces):
                for i, states in zip(batch, self._piece_states([pieces[i][0] for i in batch], mix)):
                    words = self._pooled(states, *pieces[i][1:], len(sentences[i]))
                    results[i] = words if self.trainable else words.to("cpu", STATE_DTYPE)
        self._release_memory()
        return results

    def _release_memory(self) -> None:
        """After a frozen transformer's batch, hand the C heap's free pages back
        to the system where the process has grown
        (:func:`~kgparser.model.memory.release_free_memory`): the layers'
        activations, of other shapes at each batch, leave the heap fragmented,
        and a parse's process would be some 100 MB larger at its peak."""
        if not self.trainable and self.model is not None:
            release_free_memory()

    def _pieces(self, words: Sequence[str]) -> tuple[list[int], np.ndarray, np.ndarray]:
        """A sentence's subword ids, the word (1-based) of each, and which of them
        a word's vector pools (not a bare word-boundary piece, unless the word has no other)."""
        ids, owners = self._tokenized(words)
        if len(set(owners)) < len(words):  # words the tokenizer dropped: read as unknown tokens
            unknown = self.tokenizer.unk_token or ""
            present = set(owners)
            ids, owners = self._tokenized([w if k in present else unknown for k, w in enumerate(words)])
        owner = np.asarray(owners, dtype=np.int64) + 1
        pooled = ~np.isin(np.asarray(ids, dtype=np.int64), list(self.boundary_ids))
        has_content = np.zeros(len(words) + 1, dtype=bool)
        has_content[owner[pooled]] = True
        pooled |= ~has_content[owner]
        return ids, owner, pooled

    def _tokenized(self, words: Sequence[str]) -> tuple[list[int], list[int]]:
        if not words:
            return [], []
        return _split(self.tokenizer, words, add_special_tokens=False)  # type: ignore[return-value]

    def _batches(self, order: list[int], pieces: list) -> list[list[int]]:
        """Consecutive runs of ``order`` whose padded windows hold about
        :data:`TOKENS_PER_CALL` subwords for this device."""
        batches: list[list[int]] = []
        batch: list[int] = []
        windows, longest = 0, 0
        budget = TOKENS_PER_CALL.get(self.device.type, TOKENS_PER_CALL["cpu"])
        for i in order:
            count = len(pieces[i][0])
            size = min(count, self.window) + len(self.prefix) + len(self.suffix)
            added = len(_window_starts(count, self.window, self.overlap))
            if batch and (windows + added) * max(longest, size) > budget:
                batches.append(batch)
                batch, windows, longest = [], 0, 0
            batch.append(i)
            windows, longest = windows + added, max(longest, size)
        return batches + [batch] if batch else batches

    def _piece_states(self, sentences: list[list[int]], mix: torch.Tensor | None = None) -> list[torch.Tensor]:
        """Per sentence (given by its subword ids), ``[1 + subwords, S, H]``: the
        leading special token's states (any row where there is none), then each
        subword's (``mix``: their weighted sum, S = 1; see :meth:`word_states`)."""
        lead = (self.prefix or [self.tokenizer.pad_token_id or 0])[:1]
        if self.table is not None:
            return [self.table(torch.tensor(lead + ids, dtype=torch.int64, device=self.device)).unsqueeze(1)
                    for ids in sentences]
        starts = [_window_starts(len(ids), self.window, self.overlap) for ids in sentences]
        states = self._run([self.prefix + ids[start:start + self.window] + self.suffix
                            for ids, begins in zip(sentences, starts) for start in begins], mix)
        stride = states.shape[1]
        flat = states.reshape(-1, *states.shape[2:])
        out, first = [], 0
        for ids, begins in zip(sentences, starts):
            rows = _central_rows(len(ids), begins, self.window, len(self.prefix), stride) + first * stride
            out.append(flat[torch.from_numpy(np.concatenate([[first * stride], rows])).to(self.device)])
            first += len(begins)
        return out

    def _run(self, texts: list[list[int]], mix: torch.Tensor | None = None) -> torch.Tensor:
        """The stacked hidden states ``[texts, longest, S, H]`` of right-padded id
        lists (``mix``: their weighted sum, ``[texts, longest, 1, H]``)."""
        longest = max(map(len, texts))
        ids = torch.full((len(texts), longest), self.tokenizer.pad_token_id or 0, dtype=torch.int64)
        mask = torch.zeros((len(texts), longest), dtype=torch.int64)
        for k, text in enumerate(texts):
            ids[k, :len(text)] = torch.tensor(text, dtype=torch.int64)
            mask[k, :len(text)] = 1
        if isinstance(self.model, PlainEncoder):
            hidden = self.model(ids.to(self.device), mask.to(self.device))
        else:
            hidden = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                output_hidden_states=True).hidden_states
        if mix is None:
            return torch.stack(hidden, dim=2).float()
        mixed = hidden[0].float() * float(mix[0])
        for weight, state in zip(mix[1:].tolist(), hidden[1:]):
            mixed.add_(state, alpha=weight)
        return mixed.unsqueeze(2)

    def _pooled(self, states: torch.Tensor, owner: np.ndarray, pooled: np.ndarray, n: int) -> torch.Tensor:
        """``[n + 1, S, H]``: ROOT's states, then each word's pooled subword states
        (zeros for a word without subwords, which only a tokenizer without an unknown token leaves)."""
        words = torch.zeros((n + 1, *states.shape[1:]), dtype=states.dtype, device=states.device)
        if self.prefix:
            words[0] = states[0]
        pieces = states[1:]
        if self.pooling == "first":
            owners, first = np.unique(owner[pooled], return_index=True)
            chosen = np.flatnonzero(pooled)[first]
            words[torch.from_numpy(owners)] = pieces[torch.from_numpy(chosen)]
            return words
        keep = torch.from_numpy(np.flatnonzero(pooled))
        index = torch.from_numpy(owner[pooled]).to(states.device)
        counts = np.bincount(owner[pooled], minlength=n + 1)[1:]
        words.index_add_(0, index, pieces[keep.to(states.device)])
        words[1:] /= torch.from_numpy(np.maximum(counts, 1)).to(states).view(-1, 1, 1)
        return words


def _split(tokenizer, words: Sequence[str], add_special_tokens: bool) -> tuple[list[int], list[int | None]]:
    """The subword ids of pre-tokenized ``words`` and the word of each (None: a
    special token), from either kind of tokenizer."""
    if isinstance(tokenizer, FolderTokenizer):
        return tokenizer.split(words, add_special_tokens)
    encoded = tokenizer([list(words)], is_split_into_words=True, add_special_tokens=add_special_tokens, verbose=False)
    return encoded["input_ids"][0], encoded.word_ids(0)


def _piece_id(tokenizer, piece: str) -> int | None:
    """The id of ``piece`` in the tokenizer's vocabulary, None where it has none."""
    if isinstance(tokenizer, FolderTokenizer):
        return tokenizer.piece_id(piece)
    return tokenizer.get_vocab().get(piece)


def _config_file(folder: Path) -> dict[str, Any] | None:
    """A folder's config.json, None where it cannot be read (transformers then says why)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return config if isinstance(config, dict) else None


def _window_starts(count: int, window: int, overlap: int) -> list[int]:
    """First subword of each window over ``count`` subwords (one window for a
    short sentence, the last ending at the sentence's end)."""
    if count <= window:
        return [0]
    return list(range(0, count - window, window - overlap)) + [count - window]


def _central_rows(count: int, starts: list[int], window: int, offset: int, stride: int) -> np.ndarray:
    """For each of ``count`` subwords, its row among its sentence's windows' rows
    (window ``k`` from row ``k * stride``, its subwords after ``offset`` leading
    special tokens), in the window whose centre is nearest."""
    position = np.arange(count)
    firsts = np.asarray(starts)
    centres = firsts + (min(count, window) - 1) / 2
    chosen = np.searchsorted((centres[:-1] + centres[1:]) / 2, position)
    return chosen * stride + offset + position - firsts[chosen]


def _prepared(model: Any, layers: int, quantize: bool, trainable: bool) -> nn.Module:
    """The model cut to its bottom ``layers`` layers, in evaluation mode, frozen
    (``trainable``: all but its token-embedding table), its linear layers
    quantized to int8 where asked (:mod:`kgparser.model.int8`)."""
    total = model.config.num_hidden_layers
    if layers < total:
        stacks = [(owner, name) for owner in model.modules() for name, child in owner.named_children()
                  if isinstance(child, nn.ModuleList) and len(child) == total]
        if not stacks:
            raise EncoderError(f"model.encoder.layers: cannot find the {total} layers of this "
                               f"{type(model).__name__} to keep {layers}; set model.encoder.layers: null")
        owner, name = stacks[0]
        setattr(owner, name, getattr(owner, name)[:layers])
        model.config.num_hidden_layers = layers
    model.eval().requires_grad_(trainable)
    model.get_input_embeddings().requires_grad_(False)
    return quantized(model) if quantize else model


def _loaded(auto_class, name: str, local: bool):
    """The tokenizer, configuration or model (``auto_class``) of a folder, or of a
    hub name: from the Hugging Face cache where it is there (no network, no
    waiting on an unreachable hub), else downloaded if the hub answers
    (:func:`_check_hub`)."""
    with _quiet(_transformers()):
        try:
            return _from_pretrained(auto_class, name, local, offline=True)
        except EncoderNotFound:
            if local:
                raise
        _check_hub(name)
        return _from_pretrained(auto_class, name, local, offline=False)


def _from_pretrained(auto_class, name: str, local: bool, offline: bool):
    """``auto_class.from_pretrained``, its failures as encoder errors."""
    try:
        return auto_class.from_pretrained(name, local_files_only=offline)
    except _weight_errors() as error:
        raise _damaged_weights(name, local, error) from None
    except (OSError, ValueError) as error:
        where = "folder" if local else "from the hub"
        raise EncoderNotFound(f"model.encoder.path: {name}: cannot load it as a Hugging Face model {where} "
                              f"({_first_line(error)})") from None


def _check_hub(name: str) -> None:
    """Raise :class:`EncoderNotFound` unless the Hugging Face hub may and does
    answer a question about ``name``: offline mode (``HF_HUB_OFFLINE``) is off,
    and one request gets an answer within :data:`HUB_TIMEOUT` seconds (the
    downloads of transformers retry for most of a minute where there is no
    network)."""
    from huggingface_hub import constants, model_info
    from huggingface_hub.utils import RepositoryNotFoundError

    missing = f"model.encoder.path: {name}: neither a local folder nor in the Hugging Face cache"
    advice = "download it where there is internet and give its folder (embeddings/README.md, 'Any hub encoder')"
    if constants.HF_HUB_OFFLINE:
        raise EncoderNotFound(f"{missing}, and offline mode is on (HF_HUB_OFFLINE); {advice}")
    try:
        model_info(name, timeout=HUB_TIMEOUT)
    except RepositoryNotFoundError:
        raise EncoderNotFound(f"{missing}, nor a model on the hub (or a private one, which needs a login)") from None
    except Exception as error:  # no connection, a timeout, a proxy: each HTTP library has its own exceptions
        raise EncoderNotFound(f"{missing}, and it could not be downloaded ({_first_line(error)}); {advice}") \
            from None


def _weight_errors() -> tuple[type[Exception], ...]:
    """What transformers raises, unwrapped, for a weight file safetensors cannot read."""
    try:
        from safetensors import SafetensorError
    except ImportError:  # then transformers reads no safetensors file
        return ()
    return (SafetensorError,)


def _damaged_weights(name: str, local: bool, error: Exception) -> EncoderError:
    """The error for weights transformers could not read: naming the damaged file
    where :func:`check_weights` finds it."""
    try:
        check_weights(Path(name) if local else _snapshot_folder(name))
    except DamagedWeights as damaged:
        return EncoderError(f"model.encoder.path: {damaged}")
    return EncoderError(f"model.encoder.path: {name}: cannot read its weights ({_first_line(error)})")


def _snapshot_folder(name: str) -> Path:
    """The local folder of a hub model transformers has just loaded (its cache snapshot)."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(name, local_files_only=True))


@contextlib.contextmanager
def _quiet(transformers):
    """No progress bars or advice from transformers, no warnings from the hub's
    library (such as its retries), while loading."""
    from huggingface_hub.utils import logging as hub_logging

    bars = transformers.utils.logging.is_progress_bar_enabled()
    level, hub_level = transformers.utils.logging.get_verbosity(), hub_logging.get_verbosity()
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    hub_logging.set_verbosity_error()
    try:
        yield
    finally:
        hub_logging.set_verbosity(hub_level)
        transformers.utils.logging.set_verbosity(level)
        if bars:
            transformers.utils.logging.enable_progress_bar()


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
