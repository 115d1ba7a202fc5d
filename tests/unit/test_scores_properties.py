"""Properties of masked_softmax, the score functions and every registered attention module.

For any scores and mask: rows sum to 1 (or are all zero when fully masked), masked weights are
exactly 0, permuting source positions permutes the weights, and padding positions appended to
the source change nothing in the unpadded ones. Drawn with hypothesis (bounded, derandomized).
"""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnkit.attention import (
    ATTENTION_TYPES,
    additive_scores,
    build_attention,
    concat_scores,
    dot_scores,
    general_scores,
    masked_softmax,
    scaled_dot_scores,
)
from attnkit.attention.spatial import AttentionPooling, SpatialAttention

PROPERTY = settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
TOL = dict(rtol=1e-5, atol=1e-6)


@st.composite
def scored(draw):
    """Scores (B, T, S) of some scale and a bool mask (B, T, S) with fully masked rows at times."""
    b, t, s = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 7))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    scale = draw(st.sampled_from([1e-4, 1.0, 30.0, 1e4]))
    scores = torch.randn(b, t, s, generator=gen) * scale
    keep = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    mask = torch.rand(b, t, s, generator=gen) < keep
    return scores, mask, gen


def _check_rows(weights: torch.Tensor, mask: torch.Tensor) -> None:
    """Rows with an allowed position sum to 1, fully masked rows are all 0, masked weights are 0."""
    assert torch.isfinite(weights).all()
    assert (weights[~mask] == 0).all()
    sums = weights.sum(-1)
    allowed = mask.any(-1)
    torch.testing.assert_close(sums[allowed], torch.ones_like(sums[allowed]), **TOL)
    assert (weights[~allowed] == 0).all()


@PROPERTY
@given(scored())
def test_masked_softmax_rows_sum_to_one_or_zero_and_masked_weights_are_zero(case):
    scores, mask, _ = case
    _check_rows(masked_softmax(scores, mask), mask)


@PROPERTY
@given(scored())
def test_masked_softmax_permuting_sources_permutes_the_weights(case):
    scores, mask, gen = case
    perm = torch.randperm(scores.size(-1), generator=gen)
    weights = masked_softmax(scores, mask)
    permuted = masked_softmax(scores[..., perm], mask[..., perm])
    torch.testing.assert_close(permuted, weights[..., perm], **TOL)


@PROPERTY
@given(scored(), st.integers(1, 5), st.sampled_from([0.0, 1e6, -1e6]))
def test_masked_softmax_padding_does_not_change_unpadded_rows(case, pad, pad_score):
    scores, mask, gen = case
    b, t, s = scores.shape
    padded = torch.cat([scores, torch.randn(b, t, pad, generator=gen) + pad_score], dim=-1)
    padded_mask = torch.cat([mask, torch.zeros(b, t, pad, dtype=torch.bool)], dim=-1)
    weights = masked_softmax(padded, padded_mask)
    assert (weights[..., s:] == 0).all()
    torch.testing.assert_close(weights[..., :s], masked_softmax(scores, mask), **TOL)


# ---- the pure score functions -------------------------------------------------------------
def _dot(q, k, gen):
    return dot_scores(q, k)


def _general(q, k, gen):
    return general_scores(q, k, torch.randn(q.size(-1), k.size(-1), generator=gen))


def _additive(q, k, gen):
    return additive_scores(q, k, torch.randn(q.size(-1), generator=gen))


def _concat(q, k, gen):
    return concat_scores(q, k, torch.randn(q.size(-1), generator=gen))


def _scaled(q, k, gen):
    return scaled_dot_scores(q, k)


SCORE_FUNCTIONS = {
    "dot": _dot,
    "general": _general,
    "additive": _additive,
    "concat": _concat,
    "scaled_dot": _scaled,
}


@pytest.mark.parametrize("name", list(SCORE_FUNCTIONS))
@PROPERTY
@given(
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(1, 7),
    st.integers(1, 6),
    st.integers(0, 10**6),
)
def test_score_functions_permute_with_the_source(name, b, t, s, d, seed):
    """scores(q, keys[:, perm]) == scores(q, keys)[..., perm]. (B, T, D), (B, S, D) -> (B, T, S)."""
    gen = torch.Generator().manual_seed(seed)
    q, keys = torch.randn(b, t, d, generator=gen), torch.randn(b, s, d, generator=gen)
    perm = torch.randperm(s, generator=gen)
    fn = SCORE_FUNCTIONS[name]
    state = gen.get_state()
    scores = fn(q, keys, gen)
    gen.set_state(state)  # the same weights for the permuted call
    permuted = fn(q, keys[:, perm].contiguous(), gen)
    assert scores.shape == (b, t, s)
    torch.testing.assert_close(permuted, scores[..., perm], **TOL)


# ---- every registered attention module ----------------------------------------------------
@st.composite
def attention_case(draw):
    """Query (B, T, Dq) or one step (B, Dq), keys (B, S, Dk), source lengths (B,) >= 0."""
    b, s = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    t = draw(st.sampled_from([None, 1, 3]))  # None: a one-step query (B, Dq)
    lengths = draw(st.lists(st.integers(0, s), min_size=b, max_size=b))
    return b, t, s, lengths, draw(st.integers(0, 10**6))


def _module(name: str, seed: int):
    torch.manual_seed(seed)
    dim = 8  # query, key and attention widths alike, so luong-dot and multihead (4 heads) fit
    return build_attention(name, dim, dim, dim, heads=4).eval(), dim


def _inputs(case, dim):
    b, t, s, lengths, seed = case
    gen = torch.Generator().manual_seed(seed + 1)
    shape = (b, dim) if t is None else (b, t, dim)
    query = torch.randn(*shape, generator=gen)
    keys = torch.randn(b, s, dim, generator=gen)
    mask = torch.arange(s)[None, :] < torch.tensor(lengths)[:, None]  # (B, S)
    return query, keys, mask, gen


def _mask_like(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The (B, S) mask broadcast to weights (B, S) or (B, T, S)."""
    return mask if weights.dim() == 2 else mask[:, None, :].expand_as(weights)


@pytest.mark.parametrize("name", list(ATTENTION_TYPES))
@PROPERTY
@given(attention_case())
def test_attention_weights_are_a_masked_distribution(name, case):
    module, dim = _module(name, case[-1])
    query, keys, mask, _ = _inputs(case, dim)
    with torch.no_grad():
        context, weights = module(query, keys, mask=mask)
    _check_rows(weights, _mask_like(weights, mask))
    assert context.shape == query.shape[:-1] + (keys.size(-1),)
    assert torch.isfinite(context).all()


#: the attentions whose weights follow what a key holds, not where it sits (position-aware ones,
#: luong-location and local-m/local-p, have their own tests in test_local.py)
CONTENT_BASED = [n for n, build in ATTENTION_TYPES.items() if not build(4, 4, 4, 1).position_aware]


def test_position_aware_attentions_are_the_ones_named_so():
    assert set(ATTENTION_TYPES) - set(CONTENT_BASED) == {"luong-location", "local-m", "local-p"}


@pytest.mark.parametrize("name", CONTENT_BASED)
@PROPERTY
@given(attention_case())
def test_attention_permuting_sources_permutes_weights_and_keeps_context(name, case):
    module, dim = _module(name, case[-1])
    query, keys, mask, gen = _inputs(case, dim)
    perm = torch.randperm(keys.size(1), generator=gen)
    with torch.no_grad():
        context, weights = module(query, keys, mask=mask)
        p_context, p_weights = module(query, keys[:, perm].contiguous(), mask=mask[:, perm])
    torch.testing.assert_close(p_weights, weights[..., perm], **TOL)
    torch.testing.assert_close(p_context, context, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(ATTENTION_TYPES))
@PROPERTY
@given(attention_case(), st.integers(1, 4))
def test_attention_padding_changes_nothing_in_unpadded_positions(name, case, pad):
    module, dim = _module(name, case[-1])
    query, keys, mask, gen = _inputs(case, dim)
    b, s, _ = keys.shape
    padded_keys = torch.cat([keys, 100 * torch.randn(b, pad, dim, generator=gen)], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(b, pad, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        context, weights = module(query, keys, mask=mask)
        p_context, p_weights = module(query, padded_keys, mask=padded_mask)
    assert (p_weights[..., s:] == 0).all()
    torch.testing.assert_close(p_weights[..., :s], weights, **TOL)
    torch.testing.assert_close(p_context, context, rtol=1e-4, atol=1e-5)


# ---- soft attention over image regions ----------------------------------------------------
@PROPERTY
@given(st.integers(1, 3), st.integers(1, 9), st.integers(0, 10**6), st.booleans())
def test_spatial_attention_is_a_masked_distribution_that_permutes_with_regions(b, r, seed, pool):
    """SpatialAttention over (B, R, C) regions and AttentionPooling over a (B, C, 1, R) map."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    c = 6
    regions = torch.randn(b, r, c, generator=gen)
    mask = torch.rand(b, r, generator=gen) < 0.7
    perm = torch.randperm(r, generator=gen)
    if pool:  # a 1x1 convolution scores each cell alone, so a 1 x R map permutes like regions
        module = AttentionPooling(c, hidden=4).eval()

        def run(x, m):
            return module(x.transpose(1, 2).unsqueeze(2), m)
    else:
        module = SpatialAttention(5, c, 4).eval()
        query = torch.randn(b, 5, generator=gen)

        def run(x, m):
            return module(query, x, mask=m)

    with torch.no_grad():
        context, weights = run(regions, mask)
        p_context, p_weights = run(regions[:, perm].contiguous(), mask[:, perm])
    _check_rows(weights, mask)
    torch.testing.assert_close(p_weights, weights[:, perm], **TOL)
    torch.testing.assert_close(p_context, context, rtol=1e-4, atol=1e-5)
