"""attnkit.capture on torch's own attention modules (nn.MultiheadAttention, nn.TransformerEncoder
in eval with its fused fast path, nn.Transformer) and on attnkit's Transformer: the captured
weights equal softmax(Q K^T / sqrt(E) + mask) computed here from each module's projection weights
and the inputs it was given, or the weights the model's own explicit path returns."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attnkit
from attnkit.data.vocab import PAD_ID
from attnkit.errors import CaptureError
from attnkit.models.transformer import Transformer, TransformerConfig

TOL = 1e-6


def manual(mha: nn.MultiheadAttention, query, key, key_padding=None, attn_mask=None):
    """(B, H, T, S) from the module's in_proj and batch-first (B, T, D) / (B, S, D) inputs;
    ``key_padding`` (B, S) True = padding, ``attn_mask`` (T, S) bool True = masked (torch's
    conventions)."""
    d, h = mha.embed_dim, mha.num_heads
    w, b = mha.in_proj_weight.double(), mha.in_proj_bias.double()
    q = query.double() @ w[:d].T + b[:d]
    k = key.double() @ w[d : 2 * d].T + b[d : 2 * d]
    q = q.view(q.size(0), q.size(1), h, -1).transpose(1, 2)  # (B, H, T, E)
    k = k.view(k.size(0), k.size(1), h, -1).transpose(1, 2)  # (B, H, S, E)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
    if key_padding is not None:
        scores = scores.masked_fill(key_padding[:, None, None, :], -math.inf)
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask, -math.inf)
    return torch.nan_to_num(scores.softmax(-1), nan=0.0)


def inputs_of(modules):
    """Hooks that record each module's (query, key) as it is called; returns the list."""
    seen = []
    for m in modules:
        m.register_forward_pre_hook(
            lambda mod, args, kwargs: seen.append((args[0], args[1])), with_kwargs=True
        )
    return seen


class WithMHA(nn.Module):
    def __init__(self, need_weights: bool, batch_first: bool = True):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 4, batch_first=batch_first)
        self.need_weights = need_weights

    def forward(self, x, key_padding_mask=None):
        return self.attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=self.need_weights)


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_with_a_key_padding_mask_in_eval(need_weights):
    torch.manual_seed(0)
    model = WithMHA(need_weights).eval()
    x = torch.randn(3, 5, 16)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] + [True] * 4])
    with torch.no_grad():
        plain_out, plain_w = model(x, padding)  # the fused fast path
        with attnkit.capture(model) as captured:
            out, w = model(x, padding)
    assert torch.allclose(out, plain_out, atol=1e-5)
    if need_weights:  # the model still gets the head-averaged weights it asked for
        assert w.shape == (3, 5, 5) and torch.allclose(w, plain_w, atol=TOL)
    else:
        assert w is None
    (record,) = captured
    assert (record.name, record.kind, record.heads) == ("attn", "self", 4)
    assert (record.weights.double() - manual(model.attn, x, x, padding)).abs().max() < TOL
    if need_weights:
        assert torch.allclose(record.weights.mean(1), w, atol=TOL)


def test_multihead_cross_attention_sequence_first_and_unbatched():
    torch.manual_seed(1)
    mha = nn.MultiheadAttention(16, 4).eval()  # (T, B, D) inputs
    query, memory = torch.randn(4, 2, 16), torch.randn(6, 2, 16)
    causal = torch.ones(4, 6, dtype=torch.bool).triu(1)  # True = masked
    with attnkit.capture(mha) as captured:
        mha(query, memory, memory, attn_mask=causal, need_weights=False)
        mha(query[:, 0], memory[:, 0], memory[:, 0], attn_mask=causal)  # unbatched, weights
    want = manual(mha, query.transpose(0, 1), memory.transpose(0, 1), attn_mask=causal)
    first, second = captured
    assert first.kind == "cross" and first.weights.shape == (2, 4, 4, 6)
    assert (first.weights.double() - want).abs().max() < TOL
    assert second.weights.shape == (1, 4, 4, 6)
    assert (second.weights.double() - want[:1]).abs().max() < TOL


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_transformer_encoder_in_eval_takes_the_python_path_and_gives_exact_weights():
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True).eval()
    x = torch.randn(2, 6, 16)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    seen = inputs_of(m.self_attn for m in model.layers)
    with torch.no_grad():
        plain = model(x, src_key_padding_mask=padding)  # nested tensors, fused kernels
        seen.clear()
        with attnkit.capture(model) as captured:
            out = model(x, src_key_padding_mask=padding)
    assert torch.backends.mha.get_fastpath_enabled()  # turned back on
    real = ~padding
    assert plain[padding].abs().max() == 0  # the nested-tensor path: 0 at padded positions
    assert torch.allclose(out[real], plain[real], atol=1e-5)
    assert len(seen) == 2
    assert [r.name for r in captured] == ["layers.0.self_attn", "layers.1.self_attn"]
    for record, (query, key) in zip(captured, seen):
        mha = model.layers[record.layer].self_attn
        assert (record.weights.double() - manual(mha, query, key, padding)).abs().max() < TOL
    assert captured.stack().shape == (2, 2, 4, 6, 6)


def test_nn_transformer_self_and_cross_attention():
    torch.manual_seed(3)
    model = nn.Transformer(16, 4, 1, 2, 32, dropout=0.0, batch_first=True).eval()
    src, tgt = torch.randn(2, 5, 16), torch.randn(2, 3, 16)
    causal = nn.Transformer.generate_square_subsequent_mask(3)  # float, -inf above
    mhas = [model.encoder.layers[0].self_attn]
    mhas += [m for layer in model.decoder.layers for m in (layer.self_attn, layer.multihead_attn)]
    seen = inputs_of(mhas)
    with torch.no_grad(), attnkit.capture(model) as captured:
        model(src, tgt, tgt_mask=causal, tgt_is_causal=True)
    assert len(seen) == len(captured) == 5
    assert [(r.name, r.kind, r.causal) for r in captured] == [
        ("encoder.layers.0.self_attn", "self", False),
        ("decoder.layers.0.self_attn", "self", True),
        ("decoder.layers.0.multihead_attn", "cross", False),
        ("decoder.layers.1.self_attn", "self", True),
        ("decoder.layers.1.multihead_attn", "cross", False),
    ]
    for record, mha, (query, key) in zip(captured, mhas, seen):
        mask = torch.isinf(causal) if record.causal else None
        assert (record.weights.double() - manual(mha, query, key, attn_mask=mask)).abs().max() < TOL
    with pytest.raises(CaptureError, match="the layers differ in shape"):
        captured.stack()
    assert captured.stack("decoder.layers").shape == (2, 2, 4, 3, 3)


def test_a_fused_kernel_reached_anyway_is_one_line():
    model = WithMHA(need_weights=False).eval()
    with torch.no_grad(), attnkit.capture(model):
        torch.backends.mha.set_fastpath_enabled(True)  # something turns the fast path back on
        with pytest.raises(CaptureError) as error:
            model(torch.randn(1, 3, 16))
    assert str(error.value) == (
        "capture: attn ran nn.MultiheadAttention's fused fast path, which keeps no attention "
        "weights; leave torch.backends.mha's fast path off while capturing"
    )
    assert torch.backends.mha.get_fastpath_enabled()
    assert F.multi_head_attention_forward.__module__ == "torch.nn.functional"


def test_without_a_fast_path_switch_the_fused_kernel_is_refused(monkeypatch):
    from attnkit.explain.capture import context

    monkeypatch.setattr(context, "fastpath_off", lambda: None)  # a torch with no switch
    model = WithMHA(need_weights=False).eval()
    with torch.no_grad(), pytest.raises(CaptureError, match="this torch cannot turn it off"):
        with attnkit.capture(model):
            model(torch.randn(1, 3, 16))
    with attnkit.capture(model) as captured:  # with gradients: no fast path, exact weights
        model(torch.randn(1, 3, 16))
    assert captured[0].weights.shape == (1, 4, 3, 3)


def test_attnkit_transformer_weights_equal_its_own_explicit_attention():
    torch.manual_seed(4)
    cfg = TransformerConfig(embedding_dim=32, encoder_layers=2, decoder_layers=2, heads=4)
    cfg.ff_dim, cfg.dropout = 64, 0.0
    model = Transformer(cfg, 20, 20).eval()
    src = torch.randint(4, 20, (2, 6))
    src[1, 4:] = PAD_ID
    tgt = torch.randint(4, 20, (2, 5))
    lengths = (src != PAD_ID).sum(1)
    decoder_inputs = []
    for layer in model.decoder.layers:
        layer.register_forward_pre_hook(lambda m, args: decoder_inputs.append(args[0]))
    with torch.no_grad():
        plain, _ = model(src, lengths, tgt)
        decoder_inputs.clear()
        with attnkit.capture(model) as captured:
            logits, _ = model(src, lengths, tgt)  # every attention through the fused kernel
        encoder = model.encoder_attention(src)  # (B, L, H, S, S), explicit
        _, cross = model(src, lengths, tgt, need_weights=True)  # (B, L, H, T, S), explicit
    assert torch.equal(logits, plain)
    names = [(r.name, r.kind) for r in captured]
    assert names == [
        ("encoder.layers.0.self_attn", "self"),
        ("encoder.layers.1.self_attn", "self"),
        ("decoder.layers.0.self_attn", "self"),
        ("decoder.layers.0.cross_attn", "cross"),
        ("decoder.layers.1.self_attn", "self"),
        ("decoder.layers.1.cross_attn", "cross"),
    ]
    for i in range(2):
        assert (captured[i].weights - encoder[:, i]).abs().max() < TOL
        assert (captured[3 + 2 * i].weights - cross[:, i]).abs().max() < TOL
        layer = model.decoder.layers[i]
        q, k, _ = layer.self_attn.project_all(layer.norm_self(decoder_inputs[i]))
        scores = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.size(-1))
        want = scores.masked_fill(torch.ones(5, 5, dtype=torch.bool).triu(1), -math.inf).softmax(-1)
        assert captured[2 + 2 * i].causal
        assert (captured[2 + 2 * i].weights.double() - want).abs().max() < TOL
    assert captured.stack("encoder.layers").shape == (2, 2, 4, 6, 6)


@pytest.mark.parametrize("impl", ["explicit", "chunked", "local", "linear", "performer"])
def test_attnkit_transformer_with_each_implementation_is_captured_from_what_it_applies(impl):
    """Implementations that never call SDPA are captured from the matrix they apply: for the
    exact ones it equals the weights SDPA's model (the same parameters) gives; for every one,
    multiplying the captured weights by the layer's values gives the context it computed."""
    torch.manual_seed(5)
    cfg = TransformerConfig(embedding_dim=32, encoder_layers=2, decoder_layers=1, heads=4)
    cfg.ff_dim, cfg.dropout = 64, 0.0
    cfg.attention_impl, cfg.attention_window, cfg.attention_chunk = impl, 2, 2
    model = Transformer(cfg, 20, 20).eval()
    plain_cfg = TransformerConfig(embedding_dim=32, encoder_layers=2, decoder_layers=1, heads=4)
    plain_cfg.ff_dim, plain_cfg.dropout = 64, 0.0
    plain = Transformer(plain_cfg, 20, 20).eval()
    plain.load_state_dict(model.state_dict())
    src = torch.randint(4, 20, (2, 7))
    src[1, 5:] = PAD_ID
    tgt, lengths = torch.randint(4, 20, (2, 5)), (src != PAD_ID).sum(1)
    applied = []  # (v, context) of each implementation call, in call order
    for module in model.modules():
        if getattr(module, "name", None) == impl:
            module.register_forward_hook(lambda m, a, out: applied.append((a[2], out)))
    with torch.no_grad(), attnkit.capture(model) as captured:
        model(src, lengths, tgt)
    names = [(r.name, r.kind, r.implementation) for r in captured]
    cross = "sdpa" if impl == "local" else impl  # local is for self-attention only
    assert names == [
        ("encoder.layers.0.self_attn", "self", impl),
        ("encoder.layers.1.self_attn", "self", impl),
        ("decoder.layers.0.self_attn", "self", impl),
        ("decoder.layers.0.cross_attn", "cross", cross),
    ]
    mine = [r for r in captured if r.implementation == impl]
    assert len(mine) == len(applied)
    for record, (values, context) in zip(mine, applied, strict=True):
        assert (record.weights @ values - context).abs().max() < 1e-5
        assert torch.allclose(record.weights.sum(-1)[:, :, : lengths.min()], torch.ones(1))
    if impl in ("explicit", "chunked"):
        with torch.no_grad(), attnkit.capture(plain) as reference:
            plain(src, lengths, tgt)
        for record, want in zip(captured, reference, strict=True):
            assert (record.weights - want.weights).abs().max() < TOL
            assert want.implementation == "sdpa"
