"""The additive attention scores ``v . tanh(q + k)`` by the compiled kernel, with an autograd node:
the override ``additive_scores`` of :func:`attnkit.attention.scores.additive_scores` (registered by
:mod:`attnkit.accel.overrides`, used inside a backend scope that allows kernels).

Shapes: query_proj (B, T, A), keys_proj (B, S, A), v (A,), scores (B, T, S).
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from attnkit.accel import native


def additive_scores(query_proj: Tensor, keys_proj: Tensor, v: Tensor) -> Tensor | None:
    """The scores in one compiled pass (through :class:`KernelAdditiveScores` where gradients are
    wanted), or None where the kernel does not cover these tensors (torch computes them)."""
    if not native.covers(query_proj, keys_proj, v):
        return None
    if torch.is_grad_enabled() and (
        query_proj.requires_grad or keys_proj.requires_grad or v.requires_grad
    ):
        return KernelAdditiveScores.apply(query_proj, keys_proj, v)
    return native.run_additive_energies(query_proj, keys_proj, v)


class KernelAdditiveScores(torch.autograd.Function):
    """The additive scores by the compiled kernel, which keeps tanh(q + k) (B, T, S, A) for a
    backward that is autograd's own for the torch expression: d(q + k) = (d_scores v) (1 - tanh^2).
    First-order only."""

    @staticmethod
    def forward(ctx, query_proj: Tensor, keys_proj: Tensor, v: Tensor) -> Tensor:
        b, t, a = query_proj.shape
        hidden = query_proj.new_empty(b, t, keys_proj.size(1), a)
        # additive_scores has checked covers()
        scores = native.run_additive_energies(query_proj, keys_proj, v, hidden)
        ctx.save_for_backward(hidden, v)
        return scores

    @staticmethod
    @once_differentiable
    def backward(ctx, d_scores: Tensor):
        hidden, v = ctx.saved_tensors
        need_q, need_k, need_v = ctx.needs_input_grad
        d_q = d_k = None
        if need_q or need_k:
            d_pre = torch.ops.aten.tanh_backward(d_scores.unsqueeze(-1) * v, hidden)  # (B, T, S, A)
            d_q = d_pre.sum(2) if need_q else None  # (B, T, A)
            d_k = d_pre.sum(1) if need_k else None  # (B, S, A)
        d_v = (
            (d_scores.reshape(1, -1) @ hidden.reshape(-1, hidden.size(-1))).view(-1)
            if need_v
            else None
        )
        return d_q, d_k, d_v
