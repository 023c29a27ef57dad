"""The BiLSTM feature extractor and MLP scorer of Kiperwasser & Goldberg (2016),
"Simple and Accurate Dependency Parsing Using Bidirectional LSTM Feature
Representations", TACL 4, section 3 (greedy transition-based parser).

Each token (the artificial ROOT first, at position 0) is the concatenation of
a word embedding, a tag embedding and optionally a pretrained vector and a
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
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence

from ..config import ModelConfig

SLOTS_PER_POSITION = 3  # the position itself, its leftmost and its rightmost modifier


class Network(nn.Module):
    def __init__(self, cfg: ModelConfig, *, n_words: int, n_tags: int, n_chars: int, n_ext: int,
                 ext_dim: int, n_positions: int, n_actions: int, n_arc_transitions: int):
        super().__init__()
        self.n_slots = n_positions * SLOTS_PER_POSITION
        # with a separate label MLP the two hidden layers are computed as one of twice
        # the width; the action head reads its first half, the label head its second
        self.mlp_hidden = cfg.mlp_hidden * (2 if cfg.separate_label_mlp else 1)
        self.label_half = cfg.mlp_hidden if cfg.separate_label_mlp else 0
        in_dim = 0
        self.word_emb = nn.Embedding(n_words, cfg.word_dim, padding_idx=0) if cfg.word_dim else None
        in_dim += cfg.word_dim
        self.tag_emb = nn.Embedding(n_tags, cfg.pos_dim, padding_idx=0) if cfg.pos_dim else None
        in_dim += cfg.pos_dim
        self.ext_emb = nn.Embedding(n_ext, ext_dim, padding_idx=0) if n_ext else None
        in_dim += ext_dim if n_ext else 0
        if cfg.char_dim:
            self.char_emb = nn.Embedding(n_chars, cfg.char_dim, padding_idx=0)
            self.char_lstm = nn.LSTM(cfg.char_dim, cfg.char_hidden, batch_first=True, bidirectional=True)
            in_dim += 2 * cfg.char_hidden
        else:
            self.char_emb = self.char_lstm = None
        if in_dim == 0:
            raise ValueError("the model has no input: word_dim, pos_dim and char_dim are all 0")
        # one forward and one backward LSTM per layer, run on padded batches (see _bilstm)
        self.forward_lstms = nn.ModuleList()
        self.backward_lstms = nn.ModuleList()
        for layer in range(cfg.lstm_layers):
            size = in_dim if layer == 0 else 2 * cfg.lstm_hidden
            self.forward_lstms.append(nn.LSTM(size, cfg.lstm_hidden, batch_first=True))
            self.backward_lstms.append(nn.LSTM(size, cfg.lstm_hidden, batch_first=True))
        self.input_dropout, self.lstm_dropout = cfg.input_dropout, cfg.lstm_dropout
        self.recurrent_dropout = cfg.recurrent_dropout
        dim = 2 * cfg.lstm_hidden
        self.pad = nn.Parameter(torch.randn(dim) * 0.1)
        bound = 1.0 / math.sqrt(dim * self.n_slots)
        self.w1 = nn.Parameter(torch.empty(dim, self.n_slots * self.mlp_hidden).uniform_(-bound, bound))
        self.b1 = nn.Parameter(torch.empty(self.mlp_hidden).uniform_(-bound, bound))
        self.action_out = nn.Linear(cfg.mlp_hidden, n_actions)
        self.label_out = nn.Linear(cfg.mlp_hidden, max(n_arc_transitions, 1))

    def set_pretrained(self, vectors: torch.Tensor, freeze: bool) -> None:
        """Initialise the pretrained table (rows 0 and 1, padding and unknown, stay zero)."""
        with torch.no_grad():
            self.ext_emb.weight.zero_()
            self.ext_emb.weight[2:2 + len(vectors)] = vectors
        self.ext_emb.weight.requires_grad_(not freeze)

    def _char_vectors(self, chars: torch.Tensor, char_lengths: torch.Tensor) -> torch.Tensor:
        """Final states of the character BiLSTM for every word type, plus a zero row."""
        packed = pack_padded_sequence(self.char_emb(chars), char_lengths, batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self._run_lstm(self.char_lstm, packed)
        vectors = torch.cat([h_n[0], h_n[1]], dim=1)
        return torch.cat([vectors, vectors.new_zeros(1, vectors.shape[1])])

    def encode(self, inputs: dict) -> torch.Tensor:
        """BiLSTM vectors ``[tokens + 1, dim]`` of every token (ROOT included) of every
        sentence, concatenated; the last row is the padding vector."""
        parts = []
        if self.word_emb is not None:
            parts.append(self.word_emb(inputs["words"]))
        if self.tag_emb is not None:
            parts.append(self.tag_emb(inputs["tags"]))
        if self.ext_emb is not None:
            parts.append(self.ext_emb(inputs["ext"]))
        if self.char_lstm is not None:
            parts.append(self._char_vectors(inputs["chars"], inputs["char_lengths"])[inputs["char_index"]])
        x = torch.cat(parts, dim=2) if len(parts) > 1 else parts[0]
        out = self._bilstm(x, inputs["reverse"])
        # only the real tokens, sentence after sentence (see Model.inputs for the offsets)
        tokens = out.reshape(-1, out.shape[2]).index_select(0, inputs["token_rows"])
        return torch.cat([tokens, self.pad.unsqueeze(0)])

    def _bilstm(self, x: torch.Tensor, reverse: torch.Tensor) -> torch.Tensor:
        """Stacked BiLSTM over a right-padded batch.  The backward LSTMs read each
        sentence reversed in place (``reverse`` maps position to mirrored position
        within the sentence), so padding never precedes a real token; unlike packed
        sequences this keeps CPU training on the fused LSTM kernels (about 2x faster)."""
        index = reverse.unsqueeze(2)
        for layer, (forward, backward) in enumerate(zip(self.forward_lstms, self.backward_lstms)):
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

    def scores(self, hidden: torch.Tensor, transition_action: torch.Tensor,
               transition_label: torch.Tensor) -> torch.Tensor:
        """Score of every labeled transition: action score + (for arcs) labeled score."""
        actions, labels = self.head_scores(hidden)
        labels = torch.cat([labels, labels.new_zeros(labels.shape[0], 1)], dim=1)
        return actions.index_select(1, transition_action) + labels.index_select(1, transition_label)
