"""The BiLSTM feature extractor and MLP scorer of Kiperwasser & Goldberg (2016),
"Simple and Accurate Dependency Parsing Using Bidirectional LSTM Feature
Representations", TACL 4, section 3 (greedy transition-based parser).

Each token (the artificial ROOT first, at position 0) is the concatenation of
a word embedding, a tag embedding and optionally a pretrained vector, a mix
of a frozen transformer's states (:mod:`kgparser.model.mix`) and a
character-BiLSTM vector; a multi-layer BiLSTM reads the sentence once.  A
parser state is represented by the BiLSTM vectors of the positions its
transition system declares, each with the vectors of its leftmost and
rightmost modifiers (a learned vector stands for empty positions).

Speed: the hidden layer is ``tanh(W1 [v_1; ...; v_S] + b1) = tanh(sum_k W1_k v_k + b1)``,
so :meth:`Network.project` multiplies every BiLSTM vector by every slot's block
``W1_k`` once per batch; scoring a parser state then only gathers ``S`` rows
and sums them (:meth:`Network.hidden`).

The spec's scorer is one hidden layer shared by the unlabeled-action head and
the labeled head; ``model.separate_label_mlp`` gives the labeled head its own
hidden layer, as the BIST and UUParser code do.

Joint tagging (``model.tagger``, :mod:`kgparser.model.tagger`): softmax heads on
the shared BiLSTM.  A tagger must not read the tags it predicts, so with
``model.tag_input: predicted`` (or ``soft``) the model is hierarchical: the
first BiLSTM layer reads words and characters only, the tagger reads that
layer, and the layers above read its output together with the embedding of
the tagger's best tag (``soft``: the tag embeddings weighted by the tagger's
probabilities, which lets the parser's loss reach the tagger), in the spirit
of the joint many-task model of Hashimoto et al. (2017, EMNLP, section 2).
This costs no second BiLSTM, and the parser still gets tag information
without gold tags.  With ``gold`` or ``none`` the tagger reads the top layer
(UDPipe 2's design, where the parser reads no tags at all).
"""
from __future__ import annotations

import math
from typing import cast

import torch
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence

from ..config import ModelConfig
from .inputs import Batch
from .mix import EncoderMix
from .tagger import TAG_CLASS_OFFSET, TagHeads

SLOTS_PER_POSITION = 3  # the position itself, its leftmost and its rightmost modifier


def _tag_dim(cfg: ModelConfig) -> int:
    """The size of the tag embedding (0: the model reads no tags)."""
    return cfg.pos_dim if cfg.tag_input != "none" else 0


class Network(nn.Module):
    # the optional layers (None where the configuration leaves them out)
    word_emb: nn.Embedding | None
    tag_emb: nn.Embedding | None
    ext_emb: nn.Embedding | None
    encoder_mix: EncoderMix | None
    char_emb: nn.Embedding | None
    char_lstm: nn.LSTM | None
    taggers: TagHeads | None
    finetuned_encoder: nn.Module | None

    def __init__(self, cfg: ModelConfig, *, n_words: int, n_tags: int, n_chars: int, n_ext: int,
                 ext_dim: int, n_positions: int, n_actions: int, n_arc_transitions: int,
                 tag_classes: dict[str, int] | None = None, encoder_states: tuple[int, int] = (0, 0),
                 finetuned: nn.Module | None = None):
        """``tag_classes``: number of classes of each column the tagger predicts (none: no tagger);
        ``encoder_states``: how many states of what size the encoder gives each word (none: no encoder);
        ``finetuned``: the encoder's transformer where it trains with the network (``model.encoder.finetune``),
        so that its weights are the network's (optimizer, averages, ``train()``/``eval()``, checkpoints)."""
        super().__init__()
        self.n_slots = n_positions * SLOTS_PER_POSITION
        # with a separate label MLP the two hidden layers are computed as one of twice
        # the width; the action head reads its first half, the label head its second
        self.mlp_hidden = cfg.mlp_hidden * (2 if cfg.separate_label_mlp else 1)
        self.label_half = cfg.mlp_hidden if cfg.separate_label_mlp else 0
        #: the tagger reads the first layer, whose output the upper layers read with its tags
        self.hierarchical = cfg.tag_input in ("predicted", "soft")
        self.soft_tags, self.pos_column = cfg.tag_input == "soft", cfg.pos
        # the layers are made in this order, which fixes the draws of their initial weights
        in_dim = self._make_embeddings(cfg, n_words, n_tags, n_chars, n_ext, ext_dim, encoder_states)
        self._make_bilstm(cfg, in_dim)
        self._make_scorer(cfg, n_actions, n_arc_transitions)
        # made last, so that a model without a tagger draws its initial weights as before
        #: width of the character vectors at the end of the first layer's input (0: no character model)
        self.char_out = 2 * cfg.char_hidden if cfg.char_dim > 0 else 0
        char_columns = ["lemma"] if cfg.tagger.lemma_chars else []
        detached = [] if cfg.tagger.lemma_gradient else ["lemma"]
        self.taggers = (TagHeads(2 * cfg.lstm_hidden, tag_classes, cfg.tagger.hidden, char_columns, self.char_out,
                                 detached) if tag_classes else None)
        self.finetuned_encoder = finetuned

    def _make_embeddings(self, cfg: ModelConfig, n_words: int, n_tags: int, n_chars: int, n_ext: int,
                         ext_dim: int, encoder_states: tuple[int, int]) -> int:
        """The tables and the character BiLSTM that make each token's input vector;
        returns the size of the first BiLSTM layer's input."""
        in_dim = 0
        self.word_emb = nn.Embedding(n_words, cfg.word_dim, padding_idx=0) if cfg.word_dim else None
        in_dim += cfg.word_dim
        tag_dim = _tag_dim(cfg)
        self.tag_emb = nn.Embedding(n_tags, tag_dim, padding_idx=0) if tag_dim else None
        in_dim += 0 if self.hierarchical else tag_dim
        self.ext_emb = nn.Embedding(n_ext, ext_dim, padding_idx=0) if n_ext else None
        in_dim += ext_dim if n_ext else 0
        self.encoder_mix = EncoderMix(*encoder_states, cfg.encoder.dim) if encoder_states[0] else None
        in_dim += cfg.encoder.dim if encoder_states[0] else 0
        if cfg.char_dim:
            self.char_emb = nn.Embedding(n_chars, cfg.char_dim, padding_idx=0)
            self.char_lstm = nn.LSTM(cfg.char_dim, cfg.char_hidden, batch_first=True, bidirectional=True)
            in_dim += 2 * cfg.char_hidden
        else:
            self.char_emb = self.char_lstm = None
        if in_dim == 0:
            raise ValueError("the model has no input: word_dim, pos_dim and char_dim are all 0")
        return in_dim

    def _make_bilstm(self, cfg: ModelConfig, in_dim: int) -> None:
        """The sentence BiLSTM: one forward and one backward LSTM per layer, run on
        padded batches (see :meth:`_bilstm`), and its dropout rates."""
        self.forward_lstms = nn.ModuleList()
        self.backward_lstms = nn.ModuleList()
        for layer in range(cfg.lstm_layers):
            # a hierarchical model's predicted tags join layer 2
            tags_here = _tag_dim(cfg) if self.hierarchical and layer == 1 else 0
            size = in_dim if layer == 0 else 2 * cfg.lstm_hidden + tags_here
            self.forward_lstms.append(nn.LSTM(size, cfg.lstm_hidden, batch_first=True))
            self.backward_lstms.append(nn.LSTM(size, cfg.lstm_hidden, batch_first=True))
        self.input_dropout, self.lstm_dropout = cfg.input_dropout, cfg.lstm_dropout
        self.recurrent_dropout = cfg.recurrent_dropout

    def _make_scorer(self, cfg: ModelConfig, n_actions: int, n_arc_transitions: int) -> None:
        """The vector of empty positions, the hidden layer over a state's slots and
        the action and label heads on it."""
        dim = 2 * cfg.lstm_hidden
        self.pad = nn.Parameter(torch.randn(dim) * 0.1)
        bound = 1.0 / math.sqrt(dim * self.n_slots)
        self.w1 = nn.Parameter(torch.empty(dim, self.n_slots * self.mlp_hidden).uniform_(-bound, bound))
        self.b1 = nn.Parameter(torch.empty(self.mlp_hidden).uniform_(-bound, bound))
        self.action_out = nn.Linear(cfg.mlp_hidden, n_actions)
        self.label_out = nn.Linear(cfg.mlp_hidden, max(n_arc_transitions, 1))

    def embedding_tables(self) -> dict[str, nn.Parameter]:
        """The word and pretrained-vector tables by the input key of their ids: large,
        and a batch touches few of their rows (data-parallel training sends only those)."""
        return {key: cast(nn.Parameter, table.weight)
                for key, table in (("words", self.word_emb), ("ext", self.ext_emb)) if table is not None}

    def set_pretrained(self, vectors: torch.Tensor, freeze: bool) -> None:
        """Initialise the pretrained table (rows 0 and 1, padding and unknown, stay zero)."""
        assert self.ext_emb is not None  # called only for a model with pretrained vectors
        with torch.no_grad():
            self.ext_emb.weight.zero_()
            self.ext_emb.weight[2:2 + len(vectors)] = vectors
        self.ext_emb.weight.requires_grad_(not freeze)

    def char_vectors(self, chars: torch.Tensor, char_lengths: torch.Tensor) -> torch.Tensor:
        """Final states of the character BiLSTM, forward and backward, for every form
        given by its right-padded characters ``[forms, longest]`` and their lengths
        (forms of one length need no packing, which costs a sort and a copy)."""
        assert self.char_emb is not None and self.char_lstm is not None  # called only for a character model
        x = self.char_emb(chars)
        if int(char_lengths.min()) < chars.shape[1]:
            x = pack_padded_sequence(x, char_lengths, batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self._run_lstm(self.char_lstm, x)
        return torch.cat([h_n[0], h_n[1]], dim=1)

    def encode(self, inputs: Batch) -> torch.Tensor:
        """BiLSTM vectors ``[tokens + 1, dim]`` of every token (ROOT included) of every
        sentence, concatenated; the last row is the padding vector."""
        return self.encode_all(inputs, with_tags=False)[0]

    def encode_all(self, inputs: Batch, with_tags: bool = True, with_lemma_inputs: bool = False
                   ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor | None]:
        """:meth:`encode`'s vectors; ``with_tags``, the tagger's scores of every token
        row (:meth:`tag_scores`; an empty dict without a tagger); ``with_lemma_inputs``,
        what the LEMMA head reads of every token row (:meth:`lemma_inputs`; else None)."""
        lower, read = self._lower_layers(inputs)
        upper = self._upper_layers(lower, inputs) if self.hierarchical else lower
        rows = inputs.token_rows
        vectors = torch.cat([_token_rows(upper, rows), self.pad.unsqueeze(0)])
        scores = self.tag_scores(inputs, (lower, read)) if with_tags and self.taggers is not None else {}
        return vectors, scores, self.lemma_inputs(inputs, (lower, read)) if with_lemma_inputs else None

    def tag_scores(self, inputs: Batch, lower: tuple[torch.Tensor, torch.Tensor] | None = None
                   ) -> dict[str, torch.Tensor]:
        """Scores ``[tokens, classes]`` of each predicted column for every token row (ROOT
        included, as :meth:`encode`'s rows); of a hierarchical model only the first
        BiLSTM layer runs.  ``lower``: :meth:`_lower_layers` of the batch when already computed."""
        assert self.taggers is not None  # called only for a model with a tagger
        output, read = self._lower_layers(inputs) if lower is None else lower
        chars = None
        if self.taggers.char_columns:
            chars = self._char_rows(read, inputs)
            if self.input_dropout and self.training:
                chars = nn.functional.dropout(chars, self.input_dropout)
        return self.taggers(_token_rows(output, inputs.token_rows), chars)

    def lemma_inputs(self, inputs: Batch, lower: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """What the LEMMA head reads of every token row (ROOT included), detached: the
        tagger's BiLSTM vector and, with ``model.tagger.lemma_chars``, the word's
        character vector; the input of :class:`~kgparser.model.lemmatizer.Lemmatizer`."""
        assert self.taggers is not None  # called only for a model with a tagger
        output, read = self._lower_layers(inputs) if lower is None else lower
        vectors = _token_rows(output, inputs.token_rows)
        if "lemma" in self.taggers.char_columns:
            vectors = torch.cat([vectors, self._char_rows(read, inputs)], dim=-1)
        return vectors.detach()

    def _char_rows(self, read: torch.Tensor, inputs: Batch) -> torch.Tensor:
        """The character vectors of every token row, from the first layer's padded input (where they come last)."""
        return _token_rows(read[..., read.shape[2] - self.char_out:], inputs.token_rows)

    def _lower_layers(self, inputs: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The padded output of the BiLSTM layers the tagger reads (the first of a
        hierarchical model, else all), and the padded vectors the first layer read
        (the character vectors last)."""
        stop = 1 if self.hierarchical else len(self.forward_lstms)
        read = self._input_vectors(inputs)
        return self._bilstm(read, inputs.reverse, 0, stop), read

    def _upper_layers(self, lower: torch.Tensor, inputs: Batch) -> torch.Tensor:
        """The layers above the first of a hierarchical model, reading the first
        layer's output with the vectors of the tags the tagger predicts for it."""
        assert self.taggers is not None  # a hierarchical model has a tagger (checked by the config)
        scores = self.taggers.heads[self.pos_column](lower)
        tags = self._tag_vectors(scores, inputs)
        return self._bilstm(torch.cat([lower, tags], dim=2), inputs.reverse, 1, len(self.forward_lstms))

    def _tag_vectors(self, scores: torch.Tensor, inputs: Batch) -> torch.Tensor:
        """Tag embeddings of a padded batch: of the given tags where ``tag_given``
        (ROOT, and the input's own tags at parse time), elsewhere of the best
        predicted tag (``soft``: the embeddings weighted by the predicted
        probabilities, which is differentiable)."""
        assert self.tag_emb is not None  # a hierarchical model reads tags (the config checks model.pos_dim > 0)
        table = self.tag_emb.weight[TAG_CLASS_OFFSET:]  # class c is tag id c + offset
        if self.soft_tags:
            predicted = torch.softmax(scores, dim=2) @ table
        else:
            predicted = nn.functional.embedding(scores.argmax(2), table)
        return torch.where(inputs.tag_given.unsqueeze(2), self.tag_emb(inputs.tags), predicted)

    def _input_vectors(self, inputs: Batch) -> torch.Tensor:
        """What the first BiLSTM layer reads for each padded position: word, tag (not in
        a hierarchical model), pretrained, encoder and character vectors, concatenated."""
        parts = []
        if self.word_emb is not None:
            parts.append(self.word_emb(inputs.words))
        if self.tag_emb is not None and not self.hierarchical:
            parts.append(self.tag_emb(inputs.tags))
        if self.ext_emb is not None:
            parts.append(self.ext_emb(inputs.ext))
        if self.encoder_mix is not None:
            parts.append(self.encoder_mix(inputs.encoder))
        if self.char_lstm is not None:
            parts.append(self._batch_char_vectors(inputs)[inputs.char_index])
        return torch.cat(parts, dim=2) if len(parts) > 1 else parts[0]

    def _batch_char_vectors(self, inputs: Batch) -> torch.Tensor:
        """The character vectors a batch's ``char_index`` points into, ending with a zero
        row: given ahead (``char_vectors``), or computed for the batch's own forms."""
        table = inputs.char_vectors
        if table is not None:
            return table
        assert inputs.chars is not None and inputs.char_lengths is not None  # given without char_vectors
        vectors = self.char_vectors(inputs.chars, inputs.char_lengths)
        return torch.cat([vectors, vectors.new_zeros(1, vectors.shape[1])])

    def _bilstm(self, x: torch.Tensor, reverse: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        """BiLSTM layers ``start`` to ``stop - 1`` over a right-padded batch.  The backward LSTMs read each
        sentence reversed in place (``reverse`` maps position to mirrored position
        within the sentence), so padding never precedes a real token; unlike packed
        sequences this keeps CPU training on the fused LSTM kernels (about 2x faster)."""
        index = reverse.unsqueeze(2)
        for layer in range(start, stop):
            forward, backward = cast(nn.LSTM, self.forward_lstms[layer]), cast(nn.LSTM, self.backward_lstms[layer])
            rate = self.lstm_dropout if layer else self.input_dropout
            if rate and self.training:
                x = nn.functional.dropout(x, rate)
            mirror = index.expand(-1, -1, x.shape[2])
            ahead, _ = self._run_lstm(forward, x)
            behind, _ = self._run_lstm(backward, x.gather(1, mirror))
            x = torch.cat([ahead, behind.gather(1, index.expand(-1, -1, behind.shape[2]))], dim=2)
        return x

    def _run_lstm(self, lstm: nn.LSTM, x):
        """``lstm(x)``; while training with recurrent dropout, each recurrent weight
        matrix ``W_hh`` first loses random columns (scaled by ``1 / (1 - rate)``).
        This drops units of the previous state ``h_{t-1}`` with one mask for every time
        step: the variational dropout of Gal & Ghahramani (2016, "A theoretically
        grounded application of dropout in recurrent neural networks", section 4)
        that UUParser's DyNet LSTMs apply, here with one mask per batch rather than
        per sentence, which keeps the fused LSTM kernels."""
        rate = self.recurrent_dropout
        if not (rate and self.training):
            return lstm(x)
        keep = 1.0 - rate
        dropped = {}
        for name in lstm._flat_weights_names:
            if name.startswith("weight_hh"):
                weight = getattr(lstm, name)
                mask = torch.bernoulli(weight.new_full((weight.shape[1],), keep)) / keep
                dropped[name] = weight * mask
        return functional_call(lstm, dropped, (x,))

    def project(self, vectors: torch.Tensor) -> torch.Tensor:
        """Every vector through every slot's block of the first layer: ``[rows * slots, hidden]``
        (row ``r * slots + k`` is vector ``r`` seen in slot ``k``)."""
        return (vectors @ self.w1).view(-1, self.mlp_hidden)

    def hidden(self, projected: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Hidden layer for states given as ``[states, slots]`` rows of :meth:`project`."""
        summed = nn.functional.embedding_bag(rows, projected, mode="sum")
        return torch.tanh(summed + self.b1)

    def head_scores(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(action scores, label scores)`` of states given by their hidden layer."""
        if self.label_half:
            return self.action_out(hidden[:, :self.label_half]), self.label_out(hidden[:, self.label_half:])
        return self.action_out(hidden), self.label_out(hidden)

    def scores(self, hidden: torch.Tensor, column_action: torch.Tensor, column_label: torch.Tensor) -> torch.Tensor:
        """Score of every labeled transition (the columns of
        :class:`~kgparser.model.inventory.ActionInventory`): action score + (for arcs) labeled score."""
        actions, labels = self.head_scores(hidden)
        labels = torch.cat([labels, labels.new_zeros(labels.shape[0], 1)], dim=1)
        return actions.index_select(1, column_action) + labels.index_select(1, column_label)


def _token_rows(padded: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The real tokens of a padded batch ``[batch, width, dim]``, sentence after
    sentence (``rows``: their flat positions, see ``Model.inputs``)."""
    return padded.reshape(-1, padded.shape[2]).index_select(0, rows)
