"""The encoder's states of a word mixed into one vector: a learned scalar mix
of the layers (Peters et al. 2018, "Deep contextualized word representations",
NAACL, equation 1: ``gamma * sum_j softmax(w)_j h_j``; the layer attention of
Kondratyuk & Straka 2019, UDify, without its layer dropout), then a linear
projection to ``model.encoder.dim``, read with the word and character vectors
by the first BiLSTM layer (:meth:`kgparser.model.network.Network._input_vectors`).

Where the weights no longer change (a parse), the encoder can mix each
subword's states itself before they are pooled and cached
(:meth:`EncoderMix.layer_weights`, read by :class:`kgparser.model.inputs.Inputs`):
one vector per word, not ``n_states``, which the mix then only projects.
"""
from __future__ import annotations

import torch
from torch import nn


class EncoderMix(nn.Module):
    def __init__(self, n_states: int, hidden: int, dim: int):
        super().__init__()
        #: zero logits: the mix starts as the mean of the states
        self.weights = nn.Parameter(torch.zeros(n_states))
        self.gamma = nn.Parameter(torch.ones(()))
        self.projection = nn.Linear(hidden, dim)

    def layer_weights(self) -> torch.Tensor:
        """``[n_states]``: what each state is multiplied by, ``gamma * softmax(w)``."""
        return (self.gamma * torch.softmax(self.weights, dim=0)).detach()

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        """``[..., n_states, hidden]`` states (any float type) -> ``[..., dim]``; states
        ``[..., 1, hidden]`` of a mix of more states are mixed already (:meth:`layer_weights`)."""
        if states.shape[-2] == 1 and self.weights.numel() > 1:
            return self.projection(states[..., 0, :].float())
        mixed = torch.einsum("...sh,s->...h", states.float(), torch.softmax(self.weights, dim=0))
        return self.projection(self.gamma * mixed)
