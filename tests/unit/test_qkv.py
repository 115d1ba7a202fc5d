"""QKVAttention: the explicit path (weights returned) computes what the fused kernel computes, and
masks give exactly-zero weights."""

from __future__ import annotations

import pytest
import torch

from attnkit.attention.qkv import QKVAttention


def _inputs(seed: int, b: int = 3, t: int = 5, s: int = 7, d: int = 16):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, d, generator=g)
    memory = torch.randn(b, s, d, generator=g)
    lengths = torch.tensor([s, s - 2, 1])[:b]
    padding = torch.arange(s)[None, :] < lengths[:, None]  # (B, S)
    return x, memory, padding


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("masking", ["padding", "causal", "none"])
def test_explicit_path_equals_scaled_dot_product_attention(seed, masking):
    torch.manual_seed(seed)
    attn = QKVAttention(16, 4).eval()
    x, memory, padding = _inputs(seed)
    if masking == "causal":  # self-attention over x
        memory = x
        mask = torch.ones(5, 5, dtype=torch.bool).tril()
    else:
        mask = padding[:, None, None, :] if masking == "padding" else None
    keys, values = attn.project_keys(memory)
    fused, none = attn(x, keys, values, mask, need_weights=False, fast=True)
    explicit, weights = attn(x, keys, values, mask, need_weights=True)
    assert none is None
    assert weights.shape == (3, 4, 5, memory.size(1))
    torch.testing.assert_close(fused, explicit, rtol=1e-5, atol=1e-6)
    # without the fast path the weights are still not needed, and the result is the same
    slow, _ = attn(x, keys, values, mask, need_weights=False, fast=False)
    torch.testing.assert_close(slow, explicit)


def test_masked_keys_get_exactly_zero_weight_and_rows_sum_to_one():
    attn = QKVAttention(16, 2).eval()
    x, memory, padding = _inputs(3)
    keys, values = attn.project_keys(memory)
    _, weights = attn(x, keys, values, padding[:, None, None, :], need_weights=True)
    masked = ~padding[:, None, None, :].expand_as(weights)
    assert torch.count_nonzero(weights[masked]) == 0
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 5))
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    k, v = attn.project_keys(x)
    _, w = attn(x, k, v, causal, need_weights=True)
    assert torch.count_nonzero(w.masked_select(~causal)) == 0


def test_values_behind_a_mask_do_not_reach_the_context():
    attn = QKVAttention(16, 4).eval()
    x, memory, padding = _inputs(4)
    mask = padding[:, None, None, :]
    before, _ = attn(x, *attn.project_keys(memory), mask, need_weights=True)
    changed = memory.clone()
    changed[1, -2:] = 100.0  # row 1's two padding positions
    after, _ = attn(x, *attn.project_keys(changed), mask, need_weights=True)
    torch.testing.assert_close(before, after)


def test_width_must_divide_by_heads():
    with pytest.raises(ValueError, match="divisible"):
        QKVAttention(10, 4)


def test_attention_dropout_acts_only_in_training():
    attn = QKVAttention(16, 4, dropout=0.5)
    x, memory, _ = _inputs(5)
    keys, values = attn.project_keys(memory)
    attn.train()
    torch.manual_seed(0)
    a, _ = attn(x, keys, values, need_weights=True)
    attn.eval()
    b, _ = attn(x, keys, values, need_weights=True)
    assert not torch.allclose(a, b)
    c, _ = attn(x, keys, values, need_weights=True)
    torch.testing.assert_close(b, c)
