"""A frozen BERT or XLM-R encoder in plain torch, read from a folder's
safetensors weights without importing Hugging Face ``transformers``, whose
import and model loading are most of the start-up of a model with an
encoder (docs/history/start-up.md, "Start-up (issue 49)").

:func:`plain_encoder` builds it where it can give exactly the states
transformers' ``BertModel`` / ``XLMRobertaModel`` / ``RobertaModel`` gives:
the folder's ``config.json`` names one of those architectures with the
absolute positions, the GELU and the encoder-only layout their code assumes,
and every weight the kept layers need is float32 in the safetensors files.
Anywhere else it returns None, and the encoder loads the model through
transformers as before.  The computation is the one transformers runs, step
for step and with the same kernels (``scaled_dot_product_attention``, no mask
where no window is padded, a boolean one where some are), so the hidden
states are the same to the bit.

Only what the kept layers need is read: the token-embedding table stays in
its file (:mod:`kgparser.model.token_table`: each lookup reads the rows of
its pieces), and the bottom ``layers`` layers' weights are read from their
byte ranges, not the rest of the file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from .token_table import StoredTensor, TokenTable, file_table, read_tensor, stored_tensors

#: architectures built here: ``model_type`` -> (the prefix of a task model's weights, positions as XLM-R counts them)
ARCHITECTURES = {"bert": ("bert.", False), "xlm-roberta": ("roberta.", True), "roberta": ("roberta.", True)}
#: sizes a config.json must give (their defaults differ by architecture)
SIZES = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
         "max_position_embeddings")
#: the other settings read, with the defaults of transformers' configuration classes
DEFAULTS = {"hidden_act": "gelu", "type_vocab_size": 2, "layer_norm_eps": 1e-12, "position_embedding_type": "absolute",
            "is_decoder": False, "add_cross_attention": False}
#: the default padding id of each architecture
PAD_IDS = {"bert": 0, "xlm-roberta": 1, "roberta": 1}


def plain_shape(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The settings of a config.json (defaults filled in) whose architecture
    this module builds exactly (see the module docstring), else None."""
    model_type = None if config is None else config.get("model_type")
    if config is None or model_type not in ARCHITECTURES or any(not isinstance(config.get(key), int) for key in SIZES):
        return None
    shape = {**DEFAULTS, "pad_token_id": PAD_IDS[model_type], **config}
    if (shape["hidden_act"] != "gelu" or shape["position_embedding_type"] != "absolute" or shape["is_decoder"]
            or shape["add_cross_attention"] or not isinstance(shape["pad_token_id"], int)
            or shape["hidden_size"] % shape["num_attention_heads"]):
        return None
    return shape


def plain_encoder(folder: Path, shape: dict[str, Any], layers: int) -> PlainEncoder | None:
    """The bottom ``layers`` layers of the model in ``folder`` (``shape``: its
    :func:`plain_shape`) in plain torch, frozen, in evaluation mode; None where
    its weights are not all there in float32.  A damaged weight file raises
    :class:`~kgparser.model.token_table.DamagedWeights`."""
    if not 0 < layers <= shape["num_hidden_layers"]:
        return None
    stored = stored_tensors(folder)
    prefix = _prefix(stored, ARCHITECTURES[shape["model_type"]][0])
    if prefix is None:
        return None
    expected = {**_weights(shape, layers), "table": ("embeddings.word_embeddings.weight",
                                                      (shape["vocab_size"], shape["hidden_size"]))}
    found = {here: stored.get(prefix + there) for here, (there, _) in expected.items()}
    if any(tensor is None or tensor.entry["dtype"] != "F32" or tuple(tensor.entry["shape"]) != expected[here][1]
           for here, tensor in found.items()):
        return None
    table = file_table(found.pop("table"))  # type: ignore[arg-type]
    weights = {here: read_tensor(tensor) for here, tensor in found.items()}  # type: ignore[arg-type]
    assert table is not None  # float32 reads
    return PlainEncoder(shape, layers, table, weights)


class PlainEncoder(nn.Module):
    """Embeddings and ``layers`` transformer layers of BERT / XLM-R, holding
    ``weights`` (named as :func:`_weights` names them); the word embeddings
    are a :class:`TokenTable` read from the weight file, not a parameter.
    Frozen, in evaluation mode."""

    def __init__(self, shape: dict[str, Any], layers: int, table: TokenTable, weights: dict[str, Any]):
        super().__init__()
        self.table = table
        self.xlmr_positions = ARCHITECTURES[shape["model_type"]][1]
        self.pad_id = shape["pad_token_id"]
        self.position_embeddings = nn.Embedding.from_pretrained(weights["position_embeddings.weight"])
        self.token_type_embeddings = nn.Embedding.from_pretrained(weights["token_type_embeddings.weight"])
        self.norm = _layer_norm(weights, "norm", shape["layer_norm_eps"])
        self.layers = nn.ModuleList(_Layer(shape, {name.split(".", 2)[2]: value for name, value in weights.items()
                                                   if name.startswith(f"layers.{k}.")})
                                    for k in range(layers))
        self.eval().requires_grad_(False)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        """The hidden states of right-padded ``ids`` ``[batch, length]``
        (``mask``: 1 on real tokens): the embeddings' output, then each layer's,
        as transformers' ``output_hidden_states`` gives them."""
        length = ids.shape[1]
        if self.xlmr_positions:  # fairseq's positions: counted from the padding id + 1, padding on the padding id
            real = ids.ne(self.pad_id).int()
            positions = (torch.cumsum(real, dim=1).type_as(real) * real).long() + self.pad_id
        else:
            positions = torch.arange(length, device=ids.device).unsqueeze(0)
        types = torch.zeros_like(positions)
        embedded = self.table(ids) + self.token_type_embeddings(types)
        states = [self.norm(embedded + self.position_embeddings(positions))]
        # transformers' boolean mask for scaled_dot_product_attention, left out where nothing is padded
        attention = None if bool(mask.all()) else mask.bool()[:, None, None, :].expand(ids.shape[0], 1, length, length)
        for layer in self.layers:
            states.append(layer(states[-1], attention))
        return states


class _Layer(nn.Module):
    """One transformer layer: self-attention, then the feed-forward block, each
    followed by its residual LayerNorm (post-norm, as BERT)."""

    def __init__(self, shape: dict[str, Any], weights: dict[str, torch.Tensor]):
        super().__init__()
        eps = shape["layer_norm_eps"]
        self.heads = shape["num_attention_heads"]
        self.head_size = shape["hidden_size"] // self.heads
        self.query, self.key, self.value, self.attention_output, self.intermediate, self.output = (
            _linear(weights, name) for name in ("query", "key", "value", "attention_output", "intermediate", "output"))
        self.attention_norm = _layer_norm(weights, "attention_norm", eps)
        self.output_norm = _layer_norm(weights, "output_norm", eps)

    def forward(self, states: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        batch, length = states.shape[:2]
        split = (batch, length, -1, self.head_size)
        query, key, value = (projection(states).view(*split).transpose(1, 2)
                             for projection in (self.query, self.key, self.value))
        attended = functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=0.0,
                                                           scale=self.head_size ** -0.5, is_causal=False)
        attended = attended.reshape(batch, -1, length, self.head_size).transpose(1, 2).contiguous()
        attended = attended.reshape(batch, length, -1).contiguous()
        states = self.attention_norm(self.attention_output(attended) + states)
        return self.output_norm(self.output(functional.gelu(self.intermediate(states))) + states)


def _linear(weights: dict[str, torch.Tensor], name: str) -> nn.Linear:
    """An ``nn.Linear`` (the type quantization converts) holding ``weights``'
    ``name.weight`` and ``name.bias``, made without the random initialisation
    that they would replace at once."""
    layer = nn.Linear.__new__(nn.Linear)
    nn.Module.__init__(layer)
    weight = weights[f"{name}.weight"]
    layer.out_features, layer.in_features = weight.shape
    layer.weight = nn.Parameter(weight, requires_grad=False)
    layer.bias = nn.Parameter(weights[f"{name}.bias"], requires_grad=False)
    return layer


def _layer_norm(weights: dict[str, torch.Tensor], name: str, eps: float) -> nn.LayerNorm:
    norm = nn.LayerNorm(weights[f"{name}.weight"].shape[0], eps=eps)
    norm.weight = nn.Parameter(weights[f"{name}.weight"], requires_grad=False)
    norm.bias = nn.Parameter(weights[f"{name}.bias"], requires_grad=False)
    return norm


def _prefix(stored: dict[str, StoredTensor], task_prefix: str) -> str | None:
    """Where the base model's weights are named: from the top (a base model's
    file) or under the task model's attribute (a tagger's or classifier's file)."""
    for prefix in ("", task_prefix):
        if prefix + "embeddings.word_embeddings.weight" in stored:
            return prefix
    return None


def _weights(shape: dict[str, Any], layers: int) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Each weight built here, by its name here: its name in a transformers
    weight file (under the prefix of :func:`_prefix`) and its shape."""
    hidden, inner = shape["hidden_size"], shape["intermediate_size"]
    names = {"position_embeddings.weight": ("embeddings.position_embeddings.weight",
                                            (shape["max_position_embeddings"], hidden)),
             "token_type_embeddings.weight": ("embeddings.token_type_embeddings.weight",
                                              (shape["type_vocab_size"], hidden)),
             "norm.weight": ("embeddings.LayerNorm.weight", (hidden,)),
             "norm.bias": ("embeddings.LayerNorm.bias", (hidden,))}
    parts = {"query": ("attention.self.query", hidden, hidden), "key": ("attention.self.key", hidden, hidden),
             "value": ("attention.self.value", hidden, hidden),
             "attention_output": ("attention.output.dense", hidden, hidden),
             "attention_norm": ("attention.output.LayerNorm", hidden, None),
             "intermediate": ("intermediate.dense", inner, hidden), "output": ("output.dense", hidden, inner),
             "output_norm": ("output.LayerNorm", hidden, None)}
    for k in range(layers):
        for here, (there, rows, columns) in parts.items():
            names[f"layers.{k}.{here}.weight"] = (f"encoder.layer.{k}.{there}.weight",
                                                  (rows,) if columns is None else (rows, columns))
            names[f"layers.{k}.{here}.bias"] = (f"encoder.layer.{k}.{there}.bias", (rows,))
    return names
