"""Score functions equal a slow per-(b, t, s) loop; masked_softmax masks exactly and never makes
NaN."""

import math

import pytest
import torch

from attnkit.attention.scores import (
    additive_scores,
    attend,
    concat_scores,
    dot_scores,
    general_scores,
    masked_softmax,
    scaled_dot_scores,
)

B, T, S, D, DK, A = 2, 3, 5, 4, 6, 7


def _loop(fn, b, t, s):
    """(B, T, S) tensor whose [i, j, k] entry is ``fn(i, j, k)`` (a Python float)."""
    out = torch.empty(b, t, s, dtype=torch.float64)
    for i in range(b):
        for j in range(t):
            for k in range(s):
                out[i, j, k] = float(fn(i, j, k))
    return out


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def _randn(gen, *shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def test_dot_scores_match_loop(gen):
    q, k = _randn(gen, B, T, D), _randn(gen, B, S, D)
    ref = _loop(lambda i, j, s: sum(q[i, j, d] * k[i, s, d] for d in range(D)), B, T, S)
    out = dot_scores(q, k)
    assert out.shape == (B, T, S)
    torch.testing.assert_close(out, ref)


def test_general_scores_match_loop(gen):
    # score = h_t^T W_a h_s with W_a (Dq, Dk)
    q, k, w = _randn(gen, B, T, D), _randn(gen, B, S, DK), _randn(gen, D, DK)
    ref = _loop(
        lambda i, j, s: sum(q[i, j, a] * w[a, c] * k[i, s, c] for a in range(D) for c in range(DK)),
        B,
        T,
        S,
    )
    out = general_scores(q, k, w)
    assert out.shape == (B, T, S)
    torch.testing.assert_close(out, ref)
    # the form modules use: keys projected once, then dot
    torch.testing.assert_close(dot_scores(q, k @ w.T), ref)


@pytest.mark.parametrize("fn", [additive_scores, concat_scores], ids=["additive", "concat"])
def test_additive_and_concat_scores_match_loop(gen, fn):
    qp, kp, v = _randn(gen, B, T, A), _randn(gen, B, S, A), _randn(gen, A)
    ref = _loop(
        lambda i, j, s: sum(v[a] * math.tanh(qp[i, j, a] + kp[i, s, a]) for a in range(A)), B, T, S
    )
    out = fn(qp, kp, v)
    assert out.shape == (B, T, S)
    torch.testing.assert_close(out, ref)


def test_concat_equals_tanh_of_concatenated_projection(gen):
    # Luong concat: v^T tanh(W_a [h_t; h_s]) with W_a = [W_q | W_k]
    q, k, wq, wk, v = (
        _randn(gen, B, T, D),
        _randn(gen, B, S, DK),
        _randn(gen, A, D),
        _randn(gen, A, DK),
        _randn(gen, A),
    )
    w = torch.cat([wq, wk], dim=1)  # (A, D + DK)

    def one(i, j, s):
        return float(v @ torch.tanh(w @ torch.cat([q[i, j], k[i, s]])))

    torch.testing.assert_close(concat_scores(q @ wq.T, k @ wk.T, v), _loop(one, B, T, S))


def test_scaled_dot_scores_match_loop(gen):
    q, k = _randn(gen, B, T, D), _randn(gen, B, S, D)
    ref = _loop(
        lambda i, j, s: sum(q[i, j, d] * k[i, s, d] for d in range(D)) / math.sqrt(D), B, T, S
    )
    torch.testing.assert_close(scaled_dot_scores(q, k), ref)


def test_scaled_dot_scores_broadcast_over_heads(gen):
    h = 3
    q, k = _randn(gen, B, h, T, D), _randn(gen, B, h, S, D)
    out = scaled_dot_scores(q, k)
    assert out.shape == (B, h, T, S)
    for head in range(h):
        torch.testing.assert_close(out[:, head], scaled_dot_scores(q[:, head], k[:, head]))


def test_attend_matches_loop(gen):
    w, v = torch.softmax(_randn(gen, B, T, S), -1), _randn(gen, B, S, DK)
    out = attend(w, v)
    assert out.shape == (B, T, DK)
    for i in range(B):
        for j in range(T):
            torch.testing.assert_close(out[i, j], sum(w[i, j, s] * v[i, s] for s in range(S)))


# ---- masked_softmax ------------------------------------------------------------------------------


def _mask():
    lengths = torch.tensor([S, 2])
    return torch.arange(S)[None, :] < lengths[:, None]  # (B, S)


def test_masked_softmax_without_mask_is_softmax(gen):
    x = _randn(gen, B, T, S)
    torch.testing.assert_close(masked_softmax(x, None), torch.softmax(x, -1))


def test_masked_softmax_rows_sum_to_one_and_masked_are_exactly_zero(gen):
    x = _randn(gen, B, T, S).float()
    mask = _mask()[:, None, :].expand(B, T, S)
    w = masked_softmax(x, mask)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, T))
    assert torch.all(w[~mask] == 0.0)
    assert torch.all(w[mask] > 0)
    # allowed positions get the softmax over the allowed positions only
    torch.testing.assert_close(w[1, :, :2], torch.softmax(x[1, :, :2], -1))


def test_masked_softmax_large_scores_masked_still_zero():
    x = torch.tensor([[1e30, 0.0, -1e30]])
    w = masked_softmax(x, torch.tensor([[False, True, True]]))
    assert w[0, 0].item() == 0.0
    assert torch.isfinite(w).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_fully_masked_rows_are_zero_without_nan(gen, dtype):
    x = _randn(gen, B, T, S).to(dtype).requires_grad_(True)
    mask = torch.ones(B, T, S, dtype=torch.bool)
    mask[0, 1] = False  # one fully masked row
    mask[1] = False  # a fully masked example
    w = masked_softmax(x, mask)
    assert not torch.isnan(w).any()
    assert torch.all(w[0, 1] == 0) and torch.all(w[1] == 0)
    torch.testing.assert_close(w[0, 0].sum().float(), torch.tensor(1.0), atol=1e-3, rtol=0)
    (w.float() * torch.arange(S, dtype=torch.float32)).sum().backward()
    assert x.grad is not None and not torch.isnan(x.grad).any()
    assert torch.all(x.grad[1] == 0) and torch.all(x.grad[0, 1] == 0)


def test_fully_masked_row_with_minus_inf_scores_has_no_nan():
    x = torch.full((1, 1, 3), float("-inf"), requires_grad=True)
    w = masked_softmax(x, torch.zeros(1, 1, 3, dtype=torch.bool))
    assert torch.all(w == 0)
    w.sum().backward()
    assert not torch.isnan(x.grad).any()


def test_mask_broadcasts_over_heads_and_steps(gen):
    h = 3
    x = _randn(gen, B, h, T, S)
    m = _mask()  # (B, S)
    w = masked_softmax(x, m[:, None, None, :])
    assert w.shape == (B, h, T, S)
    full = m[:, None, None, :].expand(B, h, T, S)
    assert torch.all(w[~full] == 0.0)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, h, T, dtype=w.dtype))
    torch.testing.assert_close(w, masked_softmax(x, full))


def test_non_bool_mask_is_accepted(gen):
    x = _randn(gen, B, T, S)
    m = _mask()[:, None, :]
    torch.testing.assert_close(masked_softmax(x, m.long()), masked_softmax(x, m))
