"""Pure attention score functions and the masked softmax.

Nothing here owns parameters: modules pass their weights (or keys they have
already projected) in. Shapes: queries ``(B, T, D)``, keys ``(B, S, D)``,
scores and weights ``(B, T, S)``. Extra leading dims (heads) broadcast.

Mask convention, everywhere in attnkit: a bool tensor, True = may attend,
broadcastable to the scores. It is turned into weights in one place,
:func:`masked_softmax`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnkit.attention.overrides import lookup


def masked_softmax(scores: Tensor, mask: Tensor | None, dim: int = -1) -> Tensor:
    """Softmax over ``dim`` where ``mask`` is True; masked positions get exactly 0.

    A row with no position allowed at all gets all-zero weights (not NaN), so
    padding rows in a batch are harmless.
    """
    if mask is None:
        return torch.softmax(scores, dim=dim)
    mask = mask.to(torch.bool)
    # finfo.min (not -inf) keeps fully masked rows finite; multiplying by the
    # mask afterwards makes masked weights exactly 0 and those rows all zero.
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=dim) * mask


def dot_scores(query: Tensor, keys: Tensor) -> Tensor:
    """Luong dot: ``score(h_t, h_s) = h_t . h_s``.  (B, T, D) x (B, S, D) -> (B, T, S)."""
    return query @ keys.transpose(-1, -2)


def general_scores(query: Tensor, keys: Tensor, weight: Tensor) -> Tensor:
    """Luong general: ``score = h_t^T W_a h_s`` with ``weight`` = W_a of shape (Dq, Dk).

    Equal to ``dot_scores(query, keys @ weight.T)``: modules project the keys
    once per source batch that way and call :func:`dot_scores`.
    """
    return query @ weight @ keys.transpose(-1, -2)


def additive_scores(query_proj: Tensor, keys_proj: Tensor, v: Tensor) -> Tensor:
    """Bahdanau additive: ``score = v^T tanh(W q + U h_s)``.

    ``query_proj`` = W q (B, T, A), ``keys_proj`` = U h_s (B, S, A), ``v`` (A,).
    Returns (B, T, S). Inside a backend scope that allows kernels, the override
    ``additive_scores`` (:mod:`attnkit.attention.overrides`) may compute them in one compiled pass.
    """
    fast = lookup("additive_scores")
    if fast is not None:
        scores = fast(query_proj, keys_proj, v)
        if scores is not None:
            return scores
    hidden = query_proj.unsqueeze(-2) + keys_proj.unsqueeze(-3)  # (B, T, S, A)
    # in place: the sum is not needed again (autograd keeps tanh's output), and this is the largest
    # tensor of a decoding step, so a second one of its size costs a visible share of beam search
    return hidden.tanh_() @ v


def concat_scores(query_proj: Tensor, keys_proj: Tensor, v: Tensor) -> Tensor:
    """Luong concat: ``score = v^T tanh(W_a [h_t; h_s])``.

    Splitting W_a = [W_q | W_k] makes this ``v^T tanh(W_q h_t + W_k h_s)``:
    the additive form applied to the current state h_t (Bahdanau uses s_{t-1}).
    """
    return additive_scores(query_proj, keys_proj, v)


def scaled_dot_scores(query: Tensor, keys: Tensor) -> Tensor:
    """Vaswani et al.: ``q . k / sqrt(D)``.  (..., T, D) x (..., S, D) -> (..., T, S)."""
    return (query @ keys.transpose(-1, -2)) / math.sqrt(query.size(-1))


def location_scores(
    query: Tensor, weight: Tensor, sources: int, bias: Tensor | None = None
) -> Tensor:
    """Luong location: ``a_t = softmax(W_a h_t)``, from the target state alone.

    ``weight`` W_a (P, Dq) (and ``bias`` (P,)) score P source positions; the first ``sources``
    (S <= P) are kept. (B, T, Dq) -> (B, T, S).
    """
    scores = query @ weight[:sources].T
    return scores if bias is None else scores + bias[:sources]


def local_window(centres: Tensor, sources: int, width: int) -> Tensor:
    """Luong local attention's window: source positions s with ``|s - p_t| <= D``.

    centres p_t (B, T) (integers for local-m, reals for local-p) -> bool (B, T, S).
    """
    positions = torch.arange(sources, device=centres.device, dtype=centres.dtype)
    return (positions - centres.unsqueeze(-1)).abs() <= width


def gaussian_log_weights(centres: Tensor, sources: int, sigma: float) -> Tensor:
    """log of local-p's Gaussian ``exp(-(s - p_t)^2 / (2 sigma^2))``: (B, T) -> (B, T, S).

    Added to the scores before the softmax, it multiplies the weights by the Gaussian and
    renormalises them (Luong et al. multiply without renormalising).
    """
    positions = torch.arange(sources, device=centres.device, dtype=centres.dtype)
    return -((positions - centres.unsqueeze(-1)) ** 2) / (2 * sigma**2)


def cosine_scores(query: Tensor, keys: Tensor, beta: Tensor | float, eps: float = 1e-8) -> Tensor:
    """NTM content-based addressing: ``beta * cos(k_t, M_s)``, beta >= 0 the key strength.

    query k_t (B, T, D), keys M (B, S, D), beta a number or (B, T) -> (B, T, S). A larger beta
    sharpens the softmax of these scores; beta = 0 spreads it evenly.
    """
    q = query / query.norm(dim=-1, keepdim=True).clamp_min(eps)
    k = keys / keys.norm(dim=-1, keepdim=True).clamp_min(eps)
    cos = q @ k.transpose(-1, -2)
    return cos * (beta.unsqueeze(-1) if isinstance(beta, Tensor) else beta)


def attend(weights: Tensor, values: Tensor) -> Tensor:
    """Context vectors: weighted sums of values.  (..., T, S) x (..., S, D) -> (..., T, D)."""
    return weights @ values
