"""Every registered attention module: shapes, one-step == T-step rows, masks, precomputed keys,
errors."""

import pytest
import torch

from attnkit.attention.modules import ATTENTION_TYPES, MultiHeadAttention, build_attention
from attnkit.errors import ConfigError

B, T, S, DQ, DK, A, H = 3, 4, 6, 8, 8, 12, 3
LENGTHS = torch.tensor([S, 4, 1])


def _inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(B, T, DQ, generator=g)
    keys = torch.randn(B, S, DK, generator=g)
    mask = torch.arange(S)[None, :] < LENGTHS[:, None]  # (B, S)
    return query, keys, mask


def _module(name):
    torch.manual_seed(0)
    return build_attention(name, DQ, DK, A, H).eval()


NAMES = list(ATTENTION_TYPES)


@pytest.mark.parametrize("name", NAMES)
def test_shapes(name):
    att = _module(name)
    query, keys, mask = _inputs()
    context, weights = att(query, keys, mask=mask)
    assert context.shape == (B, T, DK)
    assert weights.shape == (B, T, S)
    context1, weights1 = att(query[:, 0], keys, mask=mask)
    assert context1.shape == (B, DK)
    assert weights1.shape == (B, S)


@pytest.mark.parametrize("name", NAMES)
def test_one_step_equals_rows_of_the_t_step_call(name):
    att = _module(name)
    query, keys, mask = _inputs()
    context, weights = att(query, keys, mask=mask)
    for t in range(T):  # the step t, read by local-m (p_t = t)
        c_t, w_t = att(query[:, t], keys, mask=mask, position=t)
        torch.testing.assert_close(c_t, context[:, t], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(w_t, weights[:, t], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_weights_sum_to_one_and_padding_gets_exactly_zero(name):
    att = _module(name)
    query, keys, mask = _inputs()
    _, weights = att(query, keys, mask=mask)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, T))
    pad = ~mask[:, None, :].expand(B, T, S)
    assert torch.all(weights[pad] == 0.0)
    assert torch.all(weights[~pad] > 0.0)
    # a length-1 source puts all its attention on that one position
    torch.testing.assert_close(weights[2, :, 0], torch.ones(T))


@pytest.mark.parametrize("name", NAMES)
def test_padded_keys_do_not_change_the_result(name):
    """Garbage in padded key positions must not leak into context or weights."""
    att = _module(name)
    query, keys, mask = _inputs()
    noisy = keys.clone()
    noisy[~mask] = 1e3
    c1, w1 = att(query, keys, mask=mask)
    c2, w2 = att(query, noisy, mask=mask)
    torch.testing.assert_close(c1, c2)
    torch.testing.assert_close(w1, w2)


@pytest.mark.parametrize("name", NAMES)
def test_precomputed_projected_keys_equal_projecting_inside_forward(name):
    att = _module(name)
    query, keys, mask = _inputs()
    projected = att.project_keys(keys)
    c1, w1 = att(query, keys, projected, mask)
    c2, w2 = att(query, keys, None, mask)
    torch.testing.assert_close(c1, c2)
    torch.testing.assert_close(w1, w2)
    c1s, w1s = att(query[:, 1], keys, projected, mask)
    torch.testing.assert_close(c1s, c2[:, 1], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(w1s, w2[:, 1], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_no_mask_attends_everywhere(name):
    att = _module(name)
    query, keys, _ = _inputs()
    _, weights = att(query, keys)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, T))
    assert torch.all(weights > 0)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "uniform"])  # uniform ignores queries
def test_gradients_reach_every_parameter(name):
    att = _module(name)
    query, keys, mask = _inputs()
    query.requires_grad_(True)
    context, _ = att(query, keys, mask=mask)
    context.pow(2).sum().backward()
    assert query.grad is not None and torch.isfinite(query.grad).all()
    for pname, p in att.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname


def test_uniform_attention_is_the_mean_of_the_unmasked_keys():
    att = _module("uniform")
    query, keys, mask = _inputs()
    context, weights = att(query, keys, mask=mask)
    assert not list(att.parameters())
    counts = mask.sum(-1, keepdim=True)  # (B, 1)
    torch.testing.assert_close(weights, (mask / counts).unsqueeze(1).expand_as(weights))
    mean = (keys * mask.unsqueeze(-1)).sum(1) / counts  # (B, Dk)
    torch.testing.assert_close(context, mean.unsqueeze(1).expand_as(context))


@pytest.mark.parametrize("name", NAMES)
def test_given_weights_make_the_context_the_module_makes(name):
    """context_from_weights(w) with the module's own weights is the module's own context (for
    multihead, whose weights are the mean of its heads, a zero query: every head uniform)."""
    att = _module(name)
    query, keys, mask = _inputs()
    if name == "multihead":
        query = torch.zeros_like(query)
    context, weights = att(query, keys, mask=mask)
    projected = att.project_keys(keys)
    torch.testing.assert_close(att.context_from_weights(weights, keys, projected), context)
    one = att.context_from_weights(weights[:, 0], keys, projected)
    torch.testing.assert_close(one, context[:, 0])


@pytest.mark.parametrize("name", [n for n in NAMES if n != "multihead"])
def test_context_is_weighted_sum_of_keys(name):
    att = _module(name)
    query, keys, mask = _inputs()
    context, weights = att(query, keys, mask=mask)
    ref = torch.stack(
        [sum(weights[:, t, s, None] * keys[:, s] for s in range(S)) for t in range(T)], 1
    )
    torch.testing.assert_close(context, ref, atol=1e-5, rtol=1e-5)


def test_multihead_forward_heads():
    att = _module("multihead")
    assert isinstance(att, MultiHeadAttention)
    query, keys, mask = _inputs()
    projected = att.project_keys(keys)
    context_h, per_head = att.forward_heads(query, projected, mask)
    assert per_head.shape == (B, H, T, S)
    torch.testing.assert_close(per_head.sum(-1), torch.ones(B, H, T))
    assert torch.all(per_head[~mask[:, None, None, :].expand(B, H, T, S)] == 0.0)
    context, weights = att(query, keys, projected, mask)
    torch.testing.assert_close(weights, per_head.mean(dim=1))
    torch.testing.assert_close(context, context_h)
    # heads really differ (the projections split into H independent subspaces)
    assert not torch.allclose(per_head[:, 0], per_head[:, 1])


def test_multihead_heads_must_divide_attention_dim():
    with pytest.raises(ConfigError, match="divisible"):
        build_attention("multihead", DQ, DK, 10, 3)


def test_luong_dot_mismatched_widths_is_config_error():
    with pytest.raises(ConfigError) as err:
        build_attention("luong-dot", 8, 16, A, H)
    msg = str(err.value)
    assert "8" in msg and "16" in msg


@pytest.mark.parametrize("name", [n for n in NAMES if n != "luong-dot"])
def test_other_types_accept_mismatched_widths(name):
    att = build_attention(name, 8, 10, A, H)
    context, weights = att(torch.randn(2, 3, 8), torch.randn(2, 5, 10))
    assert context.shape == (2, 3, 10) and weights.shape == (2, 3, 5)


def test_unknown_name_lists_valid_names():
    with pytest.raises(ConfigError) as err:
        build_attention("luong-cosine", DQ, DK, A, H)
    msg = str(err.value)
    assert "luong-cosine" in msg
    for name in NAMES:
        assert name in msg


def test_bahdanau_queries_with_previous_state():
    assert _module("bahdanau").uses_previous_state
    assert not _module("luong-general").uses_previous_state


def test_loop_spec_declared_by_each_scoring_class_and_dropped_by_overriding_subclasses():
    """Registered modules declare their scores (multihead: none); a subclass that redefines
    scores(), forward() or project_keys() without its own loop_spec() declares nothing, and one
    that redefines loop_spec() too keeps its own."""
    from attnkit.attention.modules import ATTENTION_TYPES, LuongAttention, ScoreSpec

    kinds = {name: build(16, 16, 12, 2).loop_spec() for name, build in ATTENTION_TYPES.items()}
    assert {n: (s.kind if s else None) for n, s in kinds.items()} == {
        "bahdanau": "additive",
        "luong-dot": "dot",
        "luong-general": "dot",
        "luong-concat": "additive",
        "scaled-dot": "dot",
        "multihead": None,
        "luong-location": None,  # no fast loop scores by position: decoders call the module
        "local-m": None,
        "local-p": None,
        "cosine": None,
        "uniform": None,
    }
    assert kinds["scaled-dot"].scale == pytest.approx(12**-0.5)
    concat = ATTENTION_TYPES["luong-concat"](16, 16, 12, 2)
    assert concat.loop_spec().query_weight is concat.query_proj.weight

    for method in ("scores", "forward", "project_keys"):
        sub = type("Sub", (LuongAttention,), {method: getattr(LuongAttention, method)})
        assert sub("general", 16, 16).loop_spec() is None, method
        declared = type("Declared", (sub,), {"loop_spec": lambda self: ScoreSpec("dot")})
        assert declared("general", 16, 16).loop_spec().kind == "dot"
    renamed = type("Renamed", (LuongAttention,), {"extra": 1})  # changes no scoring method
    assert renamed("concat", 16, 16, 12).loop_spec().kind == "additive"
