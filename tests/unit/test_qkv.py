"""MultiHeadAttention, the one multi-head attention (the RNN decoders' ``multihead`` and every
attention of the Transformer): the explicit path (weights returned) computes what the fused kernel
computes, masks give exactly-zero weights, both parameter layouts compute torch's
``nn.MultiheadAttention``, and their parameter names are those checkpoints were written with."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnkit.attention.qkv import MultiHeadAttention
from attnkit.errors import ConfigError


def QKVAttention(width: int, heads: int, dropout: float = 0.0) -> MultiHeadAttention:
    """The Transformer's attention: the packed layout of width D."""
    return MultiHeadAttention(width, width, width, heads, packed=True, dropout=dropout)


def _call(attn, x, keys, values, mask=None, need_weights=False, fast=True):
    """x (B, T, D) against projected keys and values."""
    return attn.attend(attn.project_queries(x), keys, values, mask, need_weights, fast)


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
    fused, none = _call(attn, x, keys, values, mask, need_weights=False, fast=True)
    explicit, weights = _call(attn, x, keys, values, mask, need_weights=True)
    assert none is None
    assert weights.shape == (3, 4, 5, memory.size(1))
    torch.testing.assert_close(fused, explicit, rtol=1e-5, atol=1e-6)
    # without the fast path the weights are still not needed, and the result is the same
    slow, _ = _call(attn, x, keys, values, mask, need_weights=False, fast=False)
    torch.testing.assert_close(slow, explicit)


def test_masked_keys_get_exactly_zero_weight_and_rows_sum_to_one():
    attn = QKVAttention(16, 2).eval()
    x, memory, padding = _inputs(3)
    keys, values = attn.project_keys(memory)
    _, weights = _call(attn, x, keys, values, padding[:, None, None, :], need_weights=True)
    masked = ~padding[:, None, None, :].expand_as(weights)
    assert torch.count_nonzero(weights[masked]) == 0
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 5))
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    k, v = attn.project_keys(x)
    _, w = _call(attn, x, k, v, causal, need_weights=True)
    assert torch.count_nonzero(w.masked_select(~causal)) == 0


def test_values_behind_a_mask_do_not_reach_the_context():
    attn = QKVAttention(16, 4).eval()
    x, memory, padding = _inputs(4)
    mask = padding[:, None, None, :]
    before, _ = _call(attn, x, *attn.project_keys(memory), mask, need_weights=True)
    changed = memory.clone()
    changed[1, -2:] = 100.0  # row 1's two padding positions
    after, _ = _call(attn, x, *attn.project_keys(changed), mask, need_weights=True)
    torch.testing.assert_close(before, after)


def test_width_must_divide_by_heads():
    with pytest.raises(ConfigError, match="divisible"):
        QKVAttention(10, 4)
    with pytest.raises(ConfigError, match="equal widths"):
        MultiHeadAttention(16, 8, 16, 4, packed=True)


def test_attention_dropout_acts_only_in_training():
    attn = QKVAttention(16, 4, dropout=0.5)
    x, memory, _ = _inputs(5)
    keys, values = attn.project_keys(memory)
    attn.train()
    torch.manual_seed(0)
    a, _ = _call(attn, x, keys, values, need_weights=True)
    attn.eval()
    b, _ = _call(attn, x, keys, values, need_weights=True)
    assert not torch.allclose(a, b)
    c, _ = _call(attn, x, keys, values, need_weights=True)
    torch.testing.assert_close(b, c)


def _torch_mha(attn: MultiHeadAttention) -> nn.MultiheadAttention:
    """torch's module holding ``attn``'s weights (widths all D): an independent computation."""
    d, packed = attn.attn_dim, attn.packed
    torch_attn = nn.MultiheadAttention(d, attn.heads, bias=packed, batch_first=True)
    with torch.no_grad():
        if packed:
            torch_attn.in_proj_weight.copy_(attn.in_proj.weight)
            torch_attn.in_proj_bias.copy_(attn.in_proj.bias)
            torch_attn.out_proj.bias.copy_(attn.out_proj.bias)
        else:
            parts = (attn.query_proj, attn.key_proj, attn.value_proj)
            torch_attn.in_proj_weight.copy_(torch.cat([p.weight for p in parts]))
        torch_attn.out_proj.weight.copy_(attn.out_proj.weight)
    return torch_attn.eval()


@pytest.mark.parametrize("packed", [True, False], ids=["transformer-layout", "rnn-layout"])
def test_both_layouts_compute_torchs_multihead_attention(packed):
    """The protocol's forward (weights averaged over heads) and forward_heads (per head) give what
    nn.MultiheadAttention gives with the same weights, in either layout."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(16, 16, 16, 4, packed=packed).eval()
    x, memory, padding = _inputs(6)
    want, want_weights = _torch_mha(attn)(x, memory, memory, key_padding_mask=~padding)
    context, weights = attn(x, memory, mask=padding)
    torch.testing.assert_close(context, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, want_weights, atol=1e-6, rtol=1e-5)
    _, per_head = attn.forward_heads(x, attn.project_keys(memory), padding)
    torch.testing.assert_close(per_head.mean(1), want_weights, atol=1e-6, rtol=1e-5)
    one_step, step_weights = attn(x[:, 0], memory, mask=padding)  # (B, Dq): one decoding step
    torch.testing.assert_close(one_step, want[:, 0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(step_weights, want_weights[:, 0], atol=1e-6, rtol=1e-5)


#: the parameters checkpoints hold for each use, as they were written before the two multi-head
#: attentions became one class: name -> shape for query width 6, memory width 10, attention 8
RNN_LAYOUT = {
    "query_proj.weight": (8, 6),
    "key_proj.weight": (8, 10),
    "value_proj.weight": (8, 10),
    "out_proj.weight": (10, 8),
}
TRANSFORMER_LAYOUT = {  # width 8
    "in_proj.weight": (24, 8),
    "in_proj.bias": (24,),
    "out_proj.weight": (8, 8),
    "out_proj.bias": (8,),
}


def test_parameter_names_are_those_of_earlier_checkpoints():
    """Both uses keep the names and shapes their checkpoints were saved with, so those load as
    they are, and the models built from the registry and the Transformer hold this class."""
    from attnkit.attention.modules import build_attention
    from attnkit.models.transformer import Transformer, TransformerConfig

    rnn = build_attention("multihead", 6, 10, 8, 2)
    assert type(rnn) is MultiHeadAttention
    assert {k: tuple(v.shape) for k, v in rnn.state_dict().items()} == RNN_LAYOUT
    transformer = Transformer(
        TransformerConfig(embedding_dim=8, encoder_layers=1, decoder_layers=1, heads=2, ff_dim=8),
        7,
        7,
    )
    for name in ("encoder.layers.0.self_attn", "decoder.layers.0.cross_attn"):
        module = transformer.get_submodule(name)
        assert type(module) is MultiHeadAttention
        assert {k: tuple(v.shape) for k, v in module.state_dict().items()} == TRANSFORMER_LAYOUT
