"""What a batch of sentences turns into for the network: padded word, tag and
pretrained-word ids, character ids or vectors, and the encoder's states.

:class:`Inputs` owns the mapping from the vocabularies to tensors and the
cache of encoder states (:class:`StateCache`): the states of a sentence are a
function of its words alone (a frozen encoder runs in evaluation mode), so
they are computed once and reused, in training every epoch, at parse time for
repeated sentences.  A fine-tuned encoder's states are computed for each batch.
"""
from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np
import torch

from ..config import Config
from .embeddings import lookup_id
from .vocab import ROOT_ID, UNK_ID, Vocabularies, normalize_form

EXT_PAD, EXT_UNK = 0, 1
ROOT_FORM = "\0root"  # ROOT's key among the forms whose character vectors a batch reads
#: sentences whose encoder states a parsing model keeps (training keeps all: :meth:`Inputs.keep_all_states`)
PARSE_CACHE_SENTENCES = 1024
#: batch widths the decoder pads to per doubling of the width (:func:`rounded_width`; a power of two)
WIDTH_STEPS = 4


class CharTable(NamedTuple):
    """Character vectors computed ahead (:meth:`Inputs.char_table`): ``rows`` maps each
    form to its row of ``vectors``, whose last row is the zero vector of padding."""
    rows: dict[str, int]
    vectors: torch.Tensor


class StateCache:
    """Encoder states by sentence (the tuple of its forms); past ``limit``
    sentences the least recently used go (``None``: none go)."""

    def __init__(self, limit: int | None = PARSE_CACHE_SENTENCES):
        self.limit = limit
        self.items: OrderedDict[tuple[str, ...], torch.Tensor] = OrderedDict()
        #: the weights the cached states are mixed by (None: not mixed)
        self.mix: torch.Tensor | None = None

    def states(self, encoder, sentences: Sequence, mix: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The states of each sentence, computed by ``encoder`` where not cached
        (each distinct missing sentence once, all in one call), mixed by ``mix``
        where given (:meth:`Encoder.word_states`; a cache of other mixed states is
        emptied first).  The least recently used of the others go first, so that
        the cache and the new states together stay within ``limit`` sentences
        where they can."""
        if not _same_mix(mix, self.mix):
            self.items.clear()
            self.mix = mix
        keys = [tuple(sentence.forms) for sentence in sentences]
        missing = list(dict.fromkeys(key for key in keys if key not in self.items))
        if missing and self.limit is not None:
            wanted = set(keys)
            stale = [key for key in self.items if key not in wanted]
            for key in stale[:max(0, len(self.items) + len(missing) - self.limit)]:
                del self.items[key]
        if missing:
            self.items.update(zip(missing, encoder.word_states(missing, mix)))
        found = [self.items[key] for key in keys]
        for key in keys:
            self.items.move_to_end(key)
        while self.limit is not None and len(self.items) > self.limit:
            self.items.popitem(last=False)
        return found


def _same_mix(mix: torch.Tensor | None, other: torch.Tensor | None) -> bool:
    """Whether two mixes of the encoder's states (None: unmixed) are the same."""
    if mix is None or other is None:
        return mix is other
    return torch.equal(mix, other)


@dataclass
class Batch:
    """The tensors of a batch of sentences (:meth:`Inputs.__call__`): one padded
    row per sentence, ROOT at position 0; sentence ``i``'s token ``w`` is row
    ``offsets[i] + w`` of the network's encoded vectors, ``pad_row`` the
    padding vector's row."""

    #: word, tag ids ``[batch, width]``; whether each tag is read (else predicted)
    words: torch.Tensor
    tags: torch.Tensor
    tag_given: torch.Tensor
    #: per row, the positions the backward LSTM reads, each sentence reversed in place
    reverse: torch.Tensor
    #: the rows of the real tokens in the flattened ``[batch * width]`` layer output
    token_rows: torch.Tensor
    offsets: list[int]
    pad_row: int
    #: pretrained-word ids ``[batch, width]``, where the model has pretrained vectors
    ext: torch.Tensor | None = None
    #: the encoder's states ``[batch, width, S, H]``, where the model has an encoder
    encoder: torch.Tensor | None = None
    #: each token's row in the character vectors: those of ``char_vectors`` (a
    #: table computed ahead) or of the forms ``chars`` with ``char_lengths``
    char_index: torch.Tensor | None = None
    char_vectors: torch.Tensor | None = None
    chars: torch.Tensor | None = None
    char_lengths: torch.Tensor | None = None


class Inputs:
    """The tensors of a batch (:meth:`__call__`) for a model's vocabularies,
    pretrained words, network (character vectors) and encoder."""

    def __init__(self, config: Config, vocabs: Vocabularies, ext_index: dict[str, int], network, encoder=None):
        self.config, self.vocabs, self.ext_index = config, vocabs, ext_index
        self.network, self.encoder = network, encoder
        self.word_counts = np.array(vocabs.words.counts, dtype=np.float64)
        self.states = StateCache()
        self.device = torch.device("cpu")

    def keep_all_states(self) -> None:
        """Cache the encoder states of every sentence seen (training: each sentence
        is encoded once, in the first epoch)."""
        self.states.limit = None

    def states_ahead(self, sentences: Sequence) -> None:
        """Compute a frozen encoder's states of ``sentences`` (at most
        :data:`PARSE_CACHE_SENTENCES`) together, into the cache the batches that
        follow read: the encoder's calls, each filled with sentences of about
        the same number of subwords, pad less and run fuller over many
        sentences than over one batch's (docs/history/start-up.md, "Int8 encoder")."""
        if self.encoder is not None and not self.encoder.trainable:
            self.states.states(self.encoder, sentences, self._fixed_mix())

    def __call__(self, sentences: Sequence, rng: np.random.Generator | None = None, given_tags: bool = True,
                 char_table: CharTable | None = None, round_width: bool = False) -> Batch:
        """Index tensors for a batch; ROOT at position 0.  Sentence ``i``'s token ``w`` is
        row ``offsets[i] + w`` of :meth:`Network.encode`; ``pad_row`` the padding vector.
        With ``rng``, word dropout
        replaces a word seen ``c`` times in training by UNK with probability a/(c+a), and
        tag dropout a tag with probability ``pos_dropout``.  A model that reads its own
        predicted tags (``model.tag_input: predicted`` or ``soft``) reads instead the
        sentences' tags where they are known tags and ``given_tags`` is true (at parse
        time: the user's tags), and predicts the others (in training: all).  A model
        with characters reads their vectors from ``char_table`` where given (it must
        hold every form of the batch), else computes them for the batch.  A model with
        an encoder reads its states ``[batch, width, S, H]`` (``encoder``).  With
        ``round_width`` (the decoder), ``width`` is padded up to one of a few
        values (:func:`rounded_width`), which changes no vector of a token."""
        cfg = self.config.model
        width = max(s.n for s in sentences) + 1
        if round_width:
            width = rounded_width(width)
        words, tags, ext = self._index_arrays(sentences, width)
        if rng is not None:
            self._drop_inputs(words, tags, rng)
        sizes = [s.n + 1 for s in sentences]
        offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        token_rows = np.concatenate([np.arange(size) + i * width for i, size in enumerate(sizes)])
        reverse = np.tile(np.arange(width, dtype=np.int64), (len(sentences), 1))
        for i, size in enumerate(sizes):
            reverse[i, :size] = reverse[i, size - 1::-1]
        device = self.device
        return Batch(words=torch.from_numpy(words).to(device), tags=torch.from_numpy(tags).to(device),
                     tag_given=torch.from_numpy(tags >= ROOT_ID if given_tags else tags == ROOT_ID).to(device),
                     reverse=torch.from_numpy(reverse).to(device), token_rows=torch.from_numpy(token_rows).to(device),
                     offsets=offsets[:-1].tolist(), pad_row=int(offsets[-1]),
                     ext=None if ext is None else torch.from_numpy(ext).to(device),
                     encoder=None if self.encoder is None else self._encoder_states(sentences, width),
                     **(self._char_inputs(sentences, width, char_table) if cfg.char_dim else {}))

    def _index_arrays(self, sentences: Sequence, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Word, tag and (with external vectors) external-word ids, one padded row per
        sentence, ROOT first."""
        cfg = self.config.model
        batch = len(sentences)
        words = np.zeros((batch, width), dtype=np.int64)
        tags = np.zeros((batch, width), dtype=np.int64)
        word_index, tag_index = self.vocabs.words.index, self.vocabs.tags.index
        word_keys = (lambda forms: map(normalize_form, forms)) if cfg.normalize_words else iter
        ext = np.zeros((batch, width), dtype=np.int64) if self.ext_index else None
        for i, sentence in enumerate(sentences):
            n = sentence.n
            words[i, 0] = ROOT_ID
            words[i, 1:n + 1] = [word_index.get(f, UNK_ID) for f in word_keys(sentence.forms)]
            tags[i, 0] = ROOT_ID
            tags[i, 1:n + 1] = [tag_index.get(t, UNK_ID) for t in getattr(sentence, cfg.pos)]
            if ext is not None:
                ext[i, 0] = EXT_UNK
                ext[i, 1:n + 1] = [lookup_id(self.ext_index, f, EXT_UNK) for f in sentence.forms]
        return words, tags, ext

    def _drop_inputs(self, words: np.ndarray, tags: np.ndarray, rng: np.random.Generator) -> None:
        """Word dropout (a word seen ``c`` times becomes UNK with probability a/(c+a);
        Kiperwasser & Goldberg 2016, implementation details) and tag dropout, in place."""
        cfg = self.config.model
        if cfg.word_dropout > 0:
            alpha = cfg.word_dropout
            drop = rng.random(words.shape) < alpha / (self.word_counts[words] + alpha)
            words[drop & (words > ROOT_ID)] = UNK_ID
        if cfg.pos_dropout > 0:
            tags[(rng.random(tags.shape) < cfg.pos_dropout) & (tags > ROOT_ID)] = UNK_ID

    def _encoder_states(self, sentences: Sequence, width: int) -> torch.Tensor:
        """The encoder's states of the batch, zero-padded to ``[batch, width, S, H]``
        (cached unless the encoder is fine-tuned: then they change with its weights)."""
        if self.encoder.trainable:
            states = self.encoder.word_states([sentence.forms for sentence in sentences])
        else:
            states = self.states.states(self.encoder, sentences, self._fixed_mix())
        padded = states[0].new_zeros((len(sentences), width, *states[0].shape[1:]))
        for i, sentence_states in enumerate(states):
            padded[i, :len(sentence_states)] = sentence_states
        return padded.to(self.device)

    def _fixed_mix(self) -> torch.Tensor | None:
        """The network's weights of the encoder's states where they do not change
        while the states are cached (at parse time: a bounded cache, a network in
        evaluation mode), so that the encoder mixes them before they are pooled
        and cached (:mod:`kgparser.model.mix`); else None (training keeps every
        state, the mix learns)."""
        mix = self.network.encoder_mix
        if self.states.limit is None or self.network.training or mix is None or mix.weights.numel() == 1:
            return None
        return mix.layer_weights()

    def _char_inputs(self, sentences: Sequence, width: int, table: CharTable | None = None) -> dict:
        """Each padded position's row of the character vectors: of ``table`` where
        given (``char_vectors``), else of the batch's own distinct forms, whose
        characters are returned for :meth:`Network.char_vectors`."""
        if table is None:
            rows: dict[str, int] = {}
            row_of = lambda form: rows.setdefault(form, len(rows))  # noqa: E731
        else:
            rows, row_of = table.rows, table.rows.__getitem__
        position = np.zeros((len(sentences), width), dtype=np.int64)
        for i, sentence in enumerate(sentences):
            position[i, 0] = row_of(ROOT_FORM)
            position[i, 1:sentence.n + 1] = [row_of(form) for form in sentence.forms]
            position[i, sentence.n + 1:] = -1
        position[position < 0] = len(rows)  # the zero row
        index = torch.from_numpy(position).to(self.device)
        if table is not None:
            return {"char_vectors": table.vectors, "char_index": index}
        chars, lengths = self._char_ids(list(rows))
        return {"chars": chars, "char_lengths": lengths, "char_index": index}

    def _char_ids(self, forms: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded character ids ``[forms, longest]`` of ``forms`` and their lengths."""
        char_index = self.vocabs.chars.index
        longest = max(map(_char_count, forms), default=1)
        chars = np.zeros((len(forms), longest), dtype=np.int64)
        lengths = np.ones(len(forms), dtype=np.int64)
        for t, form in enumerate(forms):
            if form == ROOT_FORM:
                chars[t, 0] = ROOT_ID
                continue
            ids = [char_index.get(c, UNK_ID) for c in form] or [UNK_ID]
            chars[t, :len(ids)] = ids
            lengths[t] = len(ids)
        return torch.from_numpy(chars).to(self.device), torch.from_numpy(lengths)

    def char_table(self, sentences: Sequence, group: int = 1024) -> CharTable:
        """The character vectors of every distinct form of ``sentences`` (and of ROOT),
        each computed once however many batches read it (at parse time, see
        :func:`kgparser.inference.decode.decode`), up to ``group`` forms of one length at a time."""
        # sorted in full, not in set order: string hashes, and so the groups, change with each process
        forms = sorted({form for sentence in sentences for form in sentence.forms} | {ROOT_FORM},
                       key=lambda form: (_char_count(form), form))
        parts = []
        # torch's own LSTM kernels, not oneDNN's: oneDNN compiles and caches a kernel for each
        # (forms, length) shape, and over a corpus these shapes never stop changing, so the
        # process would keep growing (docs/history/corpus-parsing.md, "Parsing a corpus"); these groups are 3-6%
        # of a parse either way
        with torch.backends.mkldnn.flags(enabled=False, deterministic=None, allow_tf32=None, fp32_precision=None):
            for _, group_forms in itertools.groupby(forms, key=_char_count):
                same_length = list(group_forms)
                for start in range(0, len(same_length), group):
                    parts.append(self.network.char_vectors(*self._char_ids(same_length[start:start + group])))
        parts.append(parts[0].new_zeros(1, parts[0].shape[1]))
        return CharTable({form: row for row, form in enumerate(forms)}, torch.cat(parts))


def rounded_width(width: int) -> int:
    """``width`` rounded up to one of :data:`WIDTH_STEPS` values per doubling
    (exact up to 16): padded positions follow every token in both LSTM
    directions, so they change no token's vector.  Parsing then meets a few
    dozen batch shapes instead of one per sentence length, and oneDNN, which
    compiles an LSTM kernel for each shape it meets, has compiled them all
    within the first 100k words of a corpus, where the process's memory then
    stays (docs/history/corpus-parsing.md, "Parsing a corpus"); the LSTMs do about 6% more work."""
    if width <= 16:
        return width
    step = 1 << (width.bit_length() - WIDTH_STEPS.bit_length())
    return -(-width // step) * step


def _char_count(form: str) -> int:
    """How many characters the character BiLSTM reads for ``form`` (ROOT and the
    empty form read one symbol, see :meth:`Inputs._char_ids`)."""
    return 1 if form == ROOT_FORM else len(form) or 1
