"""The attention implementations of the registry against a plain softmax written here: the exact
ones equal to it (forward and gradients, padding and causal masks, batch and heads > 1), ``local``
equal to it under its band mask, ``linear`` equal to its own O(n^2) formula, ``performer`` within
its documented error and better with more features; bad input refused in one line."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnkit.attention.chunked import ChunkedAttention
from attnkit.attention.exact import ExplicitAttention
from attnkit.attention.implementations import IMPLEMENTATIONS, ImplOptions, build_implementation
from attnkit.attention.kernelized import LinearAttention, PerformerAttention
from attnkit.attention.sliding import SlidingWindowAttention
from attnkit.errors import ConfigError

TOL = dict(rtol=1e-5, atol=1e-5)
PROPERTY = settings(
    max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def reference(q, k, v, key_mask=None, causal=False, allowed=None):
    """softmax(q k^T / sqrt(Dh)) v under the mask, a row with no key allowed all zeros."""
    t, s = q.size(-2), k.size(-2)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))  # (B, H, T, S)
    mask = torch.ones(t, s, dtype=torch.bool)
    if causal:  # query t at position t + S - T
        mask = torch.arange(s)[None, :] <= torch.arange(t)[:, None] + (s - t)
    mask = mask[None, None].expand(q.size(0), 1, t, s)
    if key_mask is not None:
        mask = mask & key_mask[:, None, None, :]
    if allowed is not None:
        mask = mask & allowed
    weights = torch.softmax(scores.masked_fill(~mask, -1e30), -1) * mask
    return weights @ v


def _inputs(b, h, t, s, dh, seed, pad=True):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, n, dh, generator=g) for n in (t, s, s))
    key_mask = torch.rand(b, s, generator=g) > 0.3 if pad else None
    if pad:
        key_mask[0] = True
        key_mask[-1, : s // 2] = False  # a row that starts padded
    return [x.requires_grad_() for x in (q, k, v)], key_mask


def _outputs_and_grads(fn, q, k, v):
    out = fn(q, k, v)
    probe = torch.linspace(-1, 1, out.numel()).view_as(out)  # an uneven upstream gradient
    return (out, *torch.autograd.grad((out * probe).sum(), (q, k, v)))


#: every exact implementation of the registry (a new one is compared the day it is registered),
#: chunked with a tile narrower than the inputs and one wider
EXACT = [
    impl
    for impl in (build_implementation(name, 8, ImplOptions(chunk=3)) for name in IMPLEMENTATIONS)
    if impl.exact
] + [ChunkedAttention(128)]
SHAPES = [(7, 7), (3, 10), (10, 4), (1, 9)]


@pytest.mark.parametrize("impl", EXACT, ids=lambda i: i.name)
@pytest.mark.parametrize("t,s", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pad", [False, True])
def test_exact_implementations_equal_the_plain_softmax(impl, t, s, causal, pad):
    (q, k, v), key_mask = _inputs(2, 3, t, s, 8, seed=t * 31 + s, pad=pad)
    got = _outputs_and_grads(lambda q, k, v: impl(q, k, v, key_mask, causal), q, k, v)
    want = _outputs_and_grads(lambda q, k, v: reference(q, k, v, key_mask, causal), q, k, v)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **TOL)
        assert torch.isfinite(a).all()


@PROPERTY
@given(
    b=st.integers(1, 3),
    h=st.integers(1, 3),
    t=st.integers(1, 12),
    s=st.integers(1, 12),
    chunk=st.integers(1, 13),
    causal=st.booleans(),
    keep=st.sampled_from([0.0, 0.5, 1.0]),
    scale=st.sampled_from([0.1, 1.0, 10.0]),
    seed=st.integers(0, 2**31 - 1),
)
def test_chunked_equals_the_plain_softmax_for_any_shape_mask_and_tile(
    b, h, t, s, chunk, causal, keep, scale, seed
):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, h, n, 4, generator=g) * scale for n in (t, s, s))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    key_mask = torch.rand(b, s, generator=g) < keep  # fully masked rows at times
    got = _outputs_and_grads(
        lambda q, k, v: ChunkedAttention(chunk)(q, k, v, key_mask, causal), q, k, v
    )
    want = _outputs_and_grads(lambda q, k, v: reference(q, k, v, key_mask, causal), q, k, v)
    for a, b_ in zip(got, want):
        torch.testing.assert_close(a, b_, rtol=1e-4, atol=1e-4 * scale)


def test_chunked_gradients_pass_gradcheck_in_double():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 3, generator=g, dtype=torch.float64) for n in (5, 6, 6))
    key_mask = torch.tensor([[True, True, False, True, True, True]])
    impl = ChunkedAttention(4)
    inputs = tuple(x.requires_grad_() for x in (q, k, v))
    assert torch.autograd.gradcheck(lambda q, k, v: impl(q, k, v, key_mask, True), inputs)


def _band(t, s, window, globals_):
    """The local mask written out: |i - j| <= w around position i = row + S - T, or global."""
    allowed = torch.zeros(t, s, dtype=torch.bool)
    for row in range(t):
        i = row + s - t
        for j in range(s):
            allowed[row, j] = abs(i - j) <= window or i < globals_ or j < globals_
    return allowed


@pytest.mark.parametrize("window,globals_", [(1, 0), (2, 0), (3, 2), (1, 4)])
@pytest.mark.parametrize("t,s", [(9, 9), (3, 9), (1, 9), (12, 12)])
@pytest.mark.parametrize("causal", [False, True])
def test_local_equals_the_plain_softmax_under_its_band(window, globals_, t, s, causal):
    (q, k, v), key_mask = _inputs(2, 2, t, s, 8, seed=window * 7 + t)
    impl = SlidingWindowAttention(window, globals_)
    band = _band(t, s, window, globals_)
    got = _outputs_and_grads(lambda q, k, v: impl(q, k, v, key_mask, causal), q, k, v)
    want = _outputs_and_grads(lambda q, k, v: reference(q, k, v, key_mask, causal, band), q, k, v)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **TOL)
    weights = impl.implied_weights(q, k, key_mask, causal)
    torch.testing.assert_close(weights @ v, want[0], **TOL)


def _naive_linear(q, k, v, key_mask, causal):
    """Katharopoulos et al.'s formula as a (T, S) matrix: phi(q_i).phi(k_j) normalised."""
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    similarity = phi_q @ phi_k.transpose(-1, -2)  # (B, H, T, S)
    t, s = q.size(-2), k.size(-2)
    if causal:
        similarity = similarity * (torch.arange(s)[None] <= torch.arange(t)[:, None] + s - t)
    if key_mask is not None:
        similarity = similarity * key_mask[:, None, None, :]
    total = similarity.sum(-1, keepdim=True)
    return (similarity @ v) / torch.where(total == 0, 1.0, total)


@pytest.mark.parametrize("t,s", [(7, 7), (150, 150), (3, 10), (10, 4), (1, 9)])
@pytest.mark.parametrize("causal", [False, True])
def test_linear_equals_its_naive_quadratic_formula(t, s, causal):
    (q, k, v), key_mask = _inputs(2, 3, t, s, 8, seed=t + s)
    impl = LinearAttention()
    got = _outputs_and_grads(lambda q, k, v: impl(q, k, v, key_mask, causal), q, k, v)
    want = _outputs_and_grads(lambda q, k, v: _naive_linear(q, k, v, key_mask, causal), q, k, v)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, **TOL)
    torch.testing.assert_close(impl.implied_weights(q, k, key_mask, causal) @ v, want[0], **TOL)


def _fixed_test(seed=0):
    """The documented test of the approximations: B 4, H 4, T = S = 64, Dh 16, q and k N(0, 1/4)."""
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(4, 4, 64, 16, generator=g) * 0.5 for _ in range(2))
    v = torch.randn(4, 4, 64, 16, generator=g)
    return q, k, v, reference(q, k, v)


def test_performer_error_is_documented_and_shrinks_as_features_grow():
    q, k, v, exact = _fixed_test()
    error = {
        f: sum((PerformerAttention(16, f, seed)(q, k, v) - exact).abs().mean() for seed in range(3))
        / 3
        for f in (16, 64, 256, 1024)
    }
    assert error[16] > error[64] > error[256] > error[1024]
    assert error[256] < 0.03  # the documented bound (measured: 0.016)
    causal = PerformerAttention(16, 256, 0)(q, k, v, causal=True)
    assert (causal - reference(q, k, v, causal=True)).abs().mean() < 0.05


def test_linear_attention_stays_within_its_documented_distance_of_softmax():
    q, k, v, exact = _fixed_test()
    assert (LinearAttention()(q, k, v) - exact).abs().mean() < 0.05  # measured: 0.024


def test_performer_features_are_seeded_and_outside_the_state_dict():
    (q, k, v), key_mask = _inputs(2, 2, 6, 6, 8, seed=5)
    one, again, other = (PerformerAttention(8, 32, seed) for seed in (1, 1, 2))
    torch.testing.assert_close(one(q, k, v, key_mask), again(q, k, v, key_mask))
    assert not torch.allclose(one(q, k, v, key_mask), other(q, k, v, key_mask))
    assert dict(one.state_dict()) == {}
    torch.testing.assert_close(one.implied_weights(q, k, key_mask) @ v, one(q, k, v, key_mask))


@pytest.mark.parametrize("name", list(IMPLEMENTATIONS))
def test_every_implementation_implies_distributions_that_give_its_output(name):
    (q, k, v), _ = _inputs(2, 3, 6, 6, 8, seed=9)
    key_mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # padding at the end
    impl = build_implementation(name, 8, ImplOptions(window=2, features=16))
    for causal in (False, True):
        weights = impl.implied_weights(q, k, key_mask, causal)
        assert weights.shape == (2, 3, 6, 6)
        assert (weights >= 0).all() and (weights * ~key_mask[:, None, None, :] == 0).all()
        sums = weights.sum(-1)
        torch.testing.assert_close(sums, torch.ones_like(sums), **TOL)  # every row sees a key
        torch.testing.assert_close(weights @ v, impl(q, k, v, key_mask, causal), **TOL)


def test_bad_input_is_refused_in_one_line():
    cases = [
        (lambda: build_implementation("flash", 8), "unknown implementation 'flash'; known: "),
        (lambda: SlidingWindowAttention(0), "model.attention_window: must be at least 1"),
        (lambda: PerformerAttention(8, 0), "model.random_features: must be at least 1"),
        (lambda: ChunkedAttention(0), "model.attention_chunk: must be at least 1"),
    ]
    q = torch.zeros(1, 1, 5, 4)
    cases.append(
        (lambda: SlidingWindowAttention(5)(q, q, q), "5 is not smaller than the input's 5")
    )
    for call, message in cases:
        with pytest.raises(ConfigError, match=message) as raised:
            call()
        assert "\n" not in str(raised.value)
    with pytest.raises(ConfigError) as raised:
        build_implementation("flash", 8)
    assert all(name in str(raised.value) for name in IMPLEMENTATIONS)


def test_explicit_refuses_a_length_whose_scores_cannot_fit_before_allocating():
    q = torch.empty(1, 8, 2**20, 64, device="meta")  # 2^20 positions: 96 TiB of scores
    for impl in (ExplicitAttention(), ExplicitAttention(limit=2**30)):
        with pytest.raises(ConfigError, match="use chunked or local") as raised:
            impl(q, q, q)
        assert "\n" not in str(raised.value) and "explicit" in str(raised.value)
    small = torch.zeros(1, 1, 2048, 8)  # 48 MiB of scores: under the threshold, computed
    assert ExplicitAttention(limit=1)(small, small, small).shape == small.shape
