"""Int8 linear layers for a pretrained encoder (``model.encoder.quantize``):
vector-wise quantization (Dettmers et al. 2022, "LLM.int8(): 8-bit Matrix
Multiplication for Transformers at Scale", NeurIPS, section 3.1, without its
mixed-precision decomposition).  Each row of the weight (one output unit) has
its own scale, its largest magnitude mapped to 127, set once; each row of the
input (one token) has its own, computed at every call; the int8 products are
summed in int32 (``torch._int_mm``) and scaled back by the two scales'
outer product.

A token's scale is its own, so one token with large values does not coarsen
every other's, as one scale per input matrix does (torch's dynamic
quantization, which this replaced: it cost the accurate English model 1.3 LAS
parsed so, where this costs none; docs/history/start-up.md, "Int8 encoder").
On a CPU with VNNI the products run about four times as fast as float32's.
Elsewhere (a GPU) the layer multiplies by its dequantized weights in float32.
A frozen encoder's layers are quantized when it is loaded; a fine-tuned
encoder's once the checkpoint's trained weights are in them
(:meth:`kgparser.model.Model.from_data`).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

#: the largest magnitude of an int8 value used (symmetric: -127 .. 127)
INT8_MAX = 127
#: the smallest scale of a row
SMALLEST_SCALE = 1e-30


class Int8Linear(nn.Module):
    """``linear`` with int8 weights, one scale per output unit, and int8 inputs, one scale per row.

    With ``keep_float`` the layer also keeps ``linear``'s float32 ``weight`` and
    ``bias``, unused, as its state: a fine-tuned encoder's layers, part of the
    network whose weights a checkpoint or a worker process reads, keep the
    state of an ``nn.Linear``."""

    weight_int8: torch.Tensor
    weight_scale: torch.Tensor
    offset: torch.Tensor

    def __init__(self, linear: nn.Linear, keep_float: bool = False):
        super().__init__()
        weight = linear.weight.detach().float()
        scale = _absmax_scale(weight)
        #: ``[in, out]``: the layout ``torch._int_mm`` reads as its second operand
        self.register_buffer("weight_int8", (weight / scale).round_().to(torch.int8).t().contiguous(),
                             persistent=False)
        self.register_buffer("weight_scale", scale.squeeze(1), persistent=False)
        bias = linear.bias.detach().float() if linear.bias is not None else torch.zeros(weight.shape[0])
        self.register_buffer("offset", bias, persistent=False)
        if keep_float:
            self.weight, self.bias = linear.weight, linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        if rows.device.type != "cpu":
            out = functional.linear(rows, (self.weight_int8.t() * self.weight_scale[:, None]).to(rows.dtype),
                                    self.offset)
        else:
            row_scale = _absmax_scale(rows)
            products = torch._int_mm((rows / row_scale).round_().to(torch.int8), self.weight_int8)
            out = torch.addcmul(self.offset, products.float().mul_(row_scale), self.weight_scale)
        return out.reshape(*x.shape[:-1], -1)


def _absmax_scale(matrix: torch.Tensor) -> torch.Tensor:
    """``[rows, 1]``: each row's largest magnitude over :data:`INT8_MAX` (at least
    :data:`SMALLEST_SCALE`, so that a row of zeros divides into zeros)."""
    return (matrix.abs().amax(dim=1, keepdim=True) / INT8_MAX).clamp_(min=SMALLEST_SCALE)


def quantized(module: nn.Module, keep_float: bool = False) -> nn.Module:
    """``module`` (frozen) with each of its ``nn.Linear`` layers replaced in place
    by an :class:`Int8Linear` (``keep_float``: see there)."""
    for name, child in module.named_children():
        if isinstance(child, nn.Linear):
            setattr(module, name, Int8Linear(child, keep_float))
        else:
            quantized(child, keep_float)
    return module
