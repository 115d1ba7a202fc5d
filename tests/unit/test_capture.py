"""attnkit.capture on a hand-written module calling F.scaled_dot_product_attention: the captured
weights equal softmax(Q K^T * scale + mask) written out here in float64, for causal, boolean
padding, additive and grouped-query attention, cross-attention and batches; the model's output is
unchanged; layers and heads are chosen; online mean and rollout equal the offline ones; bad
requests are one line; everything is put back on exit."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.functional import scaled_dot_product_attention as bound_sdpa

import attnkit
from attnkit.errors import CaptureError
from attnkit.explain.capture import CaptureResult
from attnkit.explain.capture import weights as weights_module
from attnkit.explain.capture.modules import group_of, kind_of
from attnkit.explain.capture.weights import (
    attention_weights,
    forbids_later,
    sdpa_call,
    weight_chunks,
)
from attnkit.explain.rollout import rollout
from attnkit.viz.records import AttentionRecord

TOL = 1e-6


def reference(q, k, mask=None, causal=False, scale=None):
    """softmax(q k^T * scale + mask) in float64, written out: q (B, H, T, E), k (B, H, S, E) ->
    (B, H, T, S); rows with no key allowed are zeros."""
    q, k = q.double(), k.double()
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    scores = torch.einsum("bhte,bhse->bhts", q, k) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else scores + mask
    if causal:
        t, s = scores.shape[-2:]
        scores = scores.masked_fill(~torch.ones(t, s, dtype=torch.bool).tril(), -math.inf)
    return torch.nan_to_num(scores.softmax(-1), nan=0.0)


class Attn(nn.Module):
    """Multi-head attention with ``kv_heads`` key/value heads (grouped-query when fewer)."""

    def __init__(self, width=16, heads=4, kv_heads=4):
        super().__init__()
        self.heads, self.kv_heads, self.e = heads, kv_heads, width // heads
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * kv_heads * self.e)
        self.out = nn.Linear(width, width)

    def project(self, x, memory=None):
        """x (B, T, D), memory (B, S, D) -> q (B, H, T, E), k, v (B, Hk, S, E)."""
        memory = x if memory is None else memory
        (b, t, _), s = x.shape, memory.size(1)
        q = self.q(x).view(b, t, self.heads, self.e).transpose(1, 2)
        k, v = self.kv(memory).view(b, s, 2, self.kv_heads, self.e).permute(2, 0, 3, 1, 4)
        return q, k, v

    def forward(self, x, memory=None, mask=None, causal=False, scale=None):
        q, k, v = self.project(x, memory)
        gqa = self.kv_heads != self.heads
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, scale=scale, enable_gqa=gqa
        )
        return self.out(context.transpose(1, 2).flatten(2))


class Stack(nn.Module):
    """Layers of :class:`Attn` with residuals; ``memory`` given: each layer's cross-attention
    follows its self-attention."""

    def __init__(self, layers=3, kv_heads=4, cross=False):
        super().__init__()
        self.blocks = nn.ModuleList(Attn(kv_heads=kv_heads) for _ in range(layers))
        self.cross = nn.ModuleList(Attn() for _ in range(layers)) if cross else None

    def forward(self, x, mask=None, causal=False, memory=None, memory_mask=None, scale=None):
        self.inputs = []
        for i, block in enumerate(self.blocks):
            self.inputs.append(x)
            x = x + block(x, mask=mask, causal=causal, scale=scale)
            if self.cross is not None:
                self.inputs.append(x)
                x = x + self.cross[i](x, memory, mask=memory_mask)
        return x


def expected_maps(model, x, **kw):
    """Every layer's reference weights (B, H, T, S), from the inputs each layer saw."""
    maps = []
    for i, block in enumerate(model.blocks):
        xi = model.inputs[i * (2 if model.cross is not None else 1)]
        q, k, _ = block.project(xi)
        k = k.repeat_interleave(block.heads // block.kv_heads, dim=1)
        maps.append(reference(q, k, kw.get("mask"), kw.get("causal", False), kw.get("scale")))
        if model.cross is not None:
            xc = model.inputs[2 * i + 1]
            q, k, _ = model.cross[i].project(xc, kw["memory"])
            maps.append(reference(q, k, kw.get("memory_mask")))
    return maps


def run(model, x, capture_kw=None, **kw):
    """The model's output without and with capture, and the capture."""
    torch.manual_seed(0)
    with torch.no_grad():
        plain = model(x, **kw)
        with attnkit.capture(model, **(capture_kw or {})) as captured:
            out = model(x, **kw)
    return plain, out, captured


def padding_mask(lengths, s):
    """(B, 1, 1, S) True where a key is inside its sequence."""
    return (torch.arange(s)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]


def additive_mask() -> torch.Tensor:
    """(3, 1, 5, 5) float scores to add, -1e9 at random places but never on the diagonal (a
    row of nothing but -1e9 is no distribution in float32: its reference is undefined); drawn
    from its own generator, so the case is the same whatever ran before."""
    generator = torch.Generator().manual_seed(4)
    mask = torch.randn(3, 1, 5, 5, generator=generator)
    blocked = (torch.rand(3, 1, 5, 5, generator=generator) < 0.3) & ~torch.eye(5, dtype=torch.bool)
    return mask.masked_fill(blocked, -1e9)


CASES = {
    "plain": {},
    "causal": {"causal": True},
    "padding": {"mask": padding_mask([5, 3, 1], 5)},
    "additive": {"mask": additive_mask()},
    "scale": {"scale": 0.7, "causal": True},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_weights_are_the_softmax_of_the_calls_own_scores(case):
    torch.manual_seed(1)
    model = Stack().eval()
    x = torch.randn(3, 5, 16)
    plain, out, captured = run(model, x, **CASES[case])
    assert torch.equal(plain, out)  # the model's own kernel ran, untouched
    expected = expected_maps(model, x, **CASES[case])
    assert [r.layer for r in captured] == [0, 1, 2]
    assert [r.name for r in captured] == ["blocks.0", "blocks.1", "blocks.2"]
    for record, want in zip(captured, expected):
        assert record.weights.dtype == torch.float32 and record.weights.device.type == "cpu"
        assert record.weights.shape == (3, 4, 5, 5)
        assert (record.weights.double() - want).abs().max() < TOL
        assert record.kind == "self"
        assert record.causal == ("causal" in CASES[case])
    assert captured.stack().shape == (3, 3, 4, 5, 5)


def test_grouped_query_attention_reads_each_key_head_for_its_group():
    torch.manual_seed(2)
    model = Stack(layers=2, kv_heads=2).eval()
    x = torch.randn(2, 6, 16)
    plain, out, captured = run(model, x, causal=True)
    assert torch.equal(plain, out)
    for record, want in zip(captured, expected_maps(model, x, causal=True)):
        assert record.heads == 4 and (record.weights.double() - want).abs().max() < TOL
    # heads 1 and 2 read different key heads (0 and 1): not the same map
    assert not torch.allclose(captured[0].weights[:, 1], captured[0].weights[:, 2])


def test_cross_attention_with_more_keys_than_queries_and_a_padded_memory():
    torch.manual_seed(3)
    model = Stack(layers=2, cross=True).eval()
    x, memory = torch.randn(2, 4, 16), torch.randn(2, 7, 16)
    kw = {"memory": memory, "memory_mask": padding_mask([7, 2], 7), "causal": True}
    plain, out, captured = run(model, x, **kw)
    assert torch.equal(plain, out)
    assert [(r.name, r.kind) for r in captured] == [
        ("blocks.0", "self"),
        ("cross.0", "cross"),
        ("blocks.1", "self"),
        ("cross.1", "cross"),
    ]
    assert captured[1].weights.shape == (2, 4, 4, 7) and not captured[1].causal
    assert captured[1].weights[1, :, :, 2:].abs().max() == 0  # the padded memory
    for record, want in zip(captured, expected_maps(model, x, **kw)):
        assert (record.weights.double() - want).abs().max() < TOL
    assert captured.stack().shape == (2, 2, 4, 4, 4)  # the self-attention layers


def test_a_row_with_no_key_gives_zeros_not_nan():
    q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4)
    mask = torch.ones(1, 1, 3, 5, dtype=torch.bool)
    mask[0, 0, 1] = False  # query 1 may attend nowhere
    weights = attention_weights(sdpa_call(q, k, None, mask))
    assert not weights.isnan().any()
    assert weights[0, :, 1].abs().max() == 0
    assert torch.allclose(weights[0, :, [0, 2]].sum(-1), torch.ones(2, 2))
    additive = torch.zeros(1, 1, 3, 5).masked_fill(~mask, -math.inf)
    assert torch.equal(attention_weights(sdpa_call(q, k, None, additive)), weights)


def test_half_precision_calls_are_recomputed_in_float32():
    torch.manual_seed(4)
    model = Stack(layers=1).eval().to(torch.bfloat16)
    x = torch.randn(2, 5, 16, dtype=torch.bfloat16)
    plain, out, captured = run(model, x, causal=True)
    assert torch.equal(plain, out)
    q, k, _ = model.blocks[0].project(model.inputs[0])
    want = reference(q.float(), k.float(), causal=True)  # the call's own bfloat16 q and k
    assert captured[0].weights.dtype == torch.float32
    assert (captured[0].weights.double() - want).abs().max() < TOL


def test_blocks_of_queries_give_the_same_weights():
    q, k = torch.randn(2, 3, 50, 8), torch.randn(2, 3, 40, 8)
    mask = torch.rand(2, 1, 50, 40) > 0.2
    call = sdpa_call(q, k, None, mask, is_causal=False)
    blocks = list(weight_chunks(call, budget=2 * 3 * 40 * 4 * 7))  # 7 rows a block
    assert [start for start, _ in blocks] == list(range(0, 50, 7))
    joined = torch.cat([w for _, w in blocks], dim=2)
    assert (joined.double() - reference(q, k, mask)).abs().max() < TOL


def test_a_capture_in_blocks_of_queries_equals_one_in_a_piece(monkeypatch):
    torch.manual_seed(9)
    model = Stack(layers=2).eval()
    x = torch.randn(3, 9, 16)
    kw = {"mask": padding_mask([9, 6, 1], 9), "causal": True}
    _, _, whole = run(model, x, **kw)
    monkeypatch.setattr(weights_module, "CHUNK_BYTES", 3 * 4 * 9 * 4 * 2)  # 2 rows a block
    _, _, blocks = run(model, x, **kw)
    _, _, mean = run(model, x, {"online": "mean"}, **kw)
    expected = expected_maps(model, x, **kw)
    for one, many, averaged, want in zip(whole, blocks, mean, expected):
        assert torch.equal(one.weights, many.weights)
        assert (many.weights.double() - want).abs().max() < TOL
        assert (averaged.mean.double() - want.mean(1)).abs().max() < TOL


def test_causal_is_read_from_the_flag_or_the_mask():
    q = torch.randn(1, 2, 4, 8)
    lower = torch.ones(4, 4, dtype=torch.bool).tril()
    hf_style = torch.zeros(4, 4).masked_fill(~lower, torch.finfo(torch.float32).min)
    assert forbids_later(sdpa_call(q, q, None, None, is_causal=True))
    assert forbids_later(sdpa_call(q, q, None, lower))
    assert forbids_later(sdpa_call(q, q, None, hf_style))
    assert not forbids_later(sdpa_call(q, q, None, lower.T))
    assert not forbids_later(sdpa_call(q, q, None, None))
    assert not forbids_later(sdpa_call(q, q[:, :, :3], None, lower[:, :3]))  # T != S


def test_an_argument_capture_does_not_know_is_one_line():
    q = torch.randn(1, 1, 2, 4)
    with pytest.raises(CaptureError, match="called with return_lse, which capture does not know"):
        sdpa_call(q, q, q, return_lse=True)


def test_three_dimensional_and_unbatched_calls():
    q, k = torch.randn(4, 6, 8), torch.randn(4, 9, 8)
    mask = torch.rand(4, 6, 9) > 0.3
    weights = attention_weights(sdpa_call(q, k, None, mask))  # (B, 1, T, S)
    assert (weights.double() - reference(q[:, None], k[:, None], mask[:, None])).abs().max() < TOL
    q2, k2 = torch.randn(6, 8), torch.randn(9, 8)
    assert attention_weights(sdpa_call(q2, k2, None, None, is_causal=True)).shape == (1, 1, 6, 9)


def test_a_function_bound_by_name_is_captured_too():
    class Bound(nn.Module):
        def forward(self, q, k, v):
            return bound_sdpa(q, k, v)

    q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    model = Bound()
    with attnkit.capture(model) as captured:
        model(q, k, k)
    assert bound_sdpa is F.scaled_dot_product_attention  # put back
    assert len(captured) == 1 and (captured[0].weights.double() - reference(q, k)).abs().max() < TOL


def test_only_the_layers_and_heads_asked_for_are_kept():
    torch.manual_seed(5)
    model = Stack().eval()
    x = torch.randn(2, 5, 16)
    _, _, captured = run(model, x, {"layers": [2, 0], "heads": [3, 1]}, causal=True)
    expected = expected_maps(model, x, causal=True)
    assert [r.layer for r in captured] == [0, 2]
    assert captured.layer_names == ["blocks.0", "blocks.1", "blocks.2"]
    for record in captured:
        assert record.head_ids == (3, 1) and record.weights.shape == (2, 2, 5, 5)
        want = expected[record.layer][:, [3, 1]]
        assert (record.weights.double() - want).abs().max() < TOL


def test_online_mean_keeps_the_head_mean_only():
    torch.manual_seed(6)
    model = Stack().eval()
    x = torch.randn(2, 5, 16)
    _, _, captured = run(model, x, {"online": "mean"}, mask=padding_mask([5, 4], 5))
    expected = expected_maps(model, x, mask=padding_mask([5, 4], 5))
    for record, want in zip(captured, expected):
        assert record.weights is None and record.mean.shape == (2, 5, 5)
        assert (record.mean.double() - want.mean(1)).abs().max() < TOL


def test_online_rollout_equals_the_rollout_of_the_maps():
    torch.manual_seed(7)
    model = Stack(layers=4).eval()
    x = torch.randn(3, 6, 16)
    kw = {"mask": padding_mask([6, 5, 2], 6), "causal": True}
    plain, out, online = run(model, x, {"online": "rollout"}, **kw)
    assert torch.equal(plain, out)
    assert all(r.weights is None and r.mean is None for r in online)  # no map kept
    expected = torch.stack(expected_maps(model, x, **kw)).mean(2)  # (L, B, T, T)
    want = torch.stack([rollout(expected[:, b]) for b in range(3)])  # attnkit's own rollout
    assert online.rollout().shape == (3, 6, 6)
    assert (online.rollout().double() - want).abs().max() < TOL
    _, _, offline = run(model, x, **kw)
    assert (offline.rollout() - online.rollout()).abs().max() < TOL
    # rows sum to 1, and a causal stack rolls out causally
    assert torch.allclose(online.rollout().sum(-1), torch.ones(3, 6))
    assert online.rollout().triu(1).abs().max() == 0


def test_rollout_of_an_encoder_decoder_names_its_groups():
    model = Stack(layers=2, cross=True).eval()
    _, _, captured = run(model, torch.randn(1, 4, 16), memory=torch.randn(1, 3, 16))
    assert captured.rollout("blocks").shape == (1, 4, 4)  # cross-attention is left out
    assert captured.rollout().shape == (1, 4, 4)  # one group of self-attention
    with pytest.raises(CaptureError, match="no group 'cross'"):
        captured.rollout("cross")


def test_a_layer_or_head_that_does_not_exist_is_one_line_and_everything_is_put_back():
    model = Stack().eval()
    x = torch.randn(1, 4, 16)
    originals = (F.scaled_dot_product_attention, F.multi_head_attention_forward)
    fast = torch.backends.mha.get_fastpath_enabled()
    with pytest.raises(CaptureError) as error:
        with attnkit.capture(model, layers=[1, 7]):
            model(x)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("layers [7]: Stack has 3 attention layers (0 to 2: 0 blocks.0")
    with pytest.raises(CaptureError, match=r"^heads \[4\]: layer 0 \(blocks.0\) has 4 heads"):
        with attnkit.capture(model, heads=[0, 4]):
            model(x)
    with pytest.raises(ZeroDivisionError):
        with attnkit.capture(model):
            model(x)
            raise ZeroDivisionError
    assert (F.scaled_dot_product_attention, F.multi_head_attention_forward) == originals
    assert bound_sdpa is originals[0]
    assert torch.backends.mha.get_fastpath_enabled() == fast
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in model.modules())


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"layers": [-1]}, r"^layers=\[-1\]: give numbers from 0"),
        ({"heads": ["a"]}, r"^heads=\['a'\]: give numbers from 0"),
        ({"online": "max"}, r"^online='max': choose None, 'mean' or 'rollout'"),
    ],
)
def test_a_bad_selection_is_refused_at_once(kw, match):
    with pytest.raises(CaptureError, match=match):
        attnkit.capture(Stack(), **kw)


def test_dropout_in_training_mode_is_refused():
    class Dropping(nn.Module):
        def forward(self, q):
            return F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)

    model = Dropping()
    with pytest.raises(CaptureError, match=r"^capture: layer 0 \(the model\) drops attention"):
        with attnkit.capture(model):
            model(torch.randn(1, 1, 3, 4))
    with attnkit.capture(model, layers=[1]):  # a layer not asked for: no weights, no error
        with pytest.raises(CaptureError, match=r"^layers \[1\]: Dropping has 1 attention layers"):
            model(torch.randn(1, 1, 3, 4))


def test_a_model_computing_attention_itself_is_one_line():
    class Eager(nn.Module):
        def forward(self, q, k):
            return (q @ k.transpose(-2, -1)).softmax(-1) @ k

    model = Eager()
    with pytest.raises(CaptureError, match=r"^capture: Eager's forward made no attention call"):
        with attnkit.capture(model):
            model(torch.randn(1, 3, 4), torch.randn(1, 3, 4))


def test_calls_from_outside_the_model_are_left_alone():
    model, other = Stack(layers=1).eval(), Attn().eval()
    x = torch.randn(1, 3, 16)
    with attnkit.capture(model) as captured:
        other(x)  # another model: not recorded, and no error (no forward of ``model`` ended)
        model(x)
    assert [r.name for r in captured] == ["blocks.0"]


def test_every_forward_is_recorded_with_its_number():
    model = Stack(layers=2).eval()
    a, b = torch.randn(1, 3, 16), torch.randn(1, 3, 16)
    with attnkit.capture(model) as captured:
        model(a)
        model(b)
    assert [(r.forward, r.layer) for r in captured] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert not torch.equal(captured.stack(forward=0), captured.stack())
    with pytest.raises(CaptureError, match="forward 2: this capture saw 2 forward"):
        captured.stack(forward=2)


def test_a_module_that_attends_twice_is_two_layers():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attn()

        def forward(self, x):
            return self.attn(self.attn(x))

    model = Twice().eval()
    with attnkit.capture(model) as captured:
        model(torch.randn(1, 3, 16))
    assert [(r.name, r.layer, r.call) for r in captured] == [("attn", 0, 0), ("attn", 1, 1)]


def test_views_to_dict_record_plot_and_show(tmp_path):
    torch.manual_seed(8)
    model = Stack(layers=2).eval()
    x = torch.randn(2, 4, 16)
    _, _, captured = run(model, x, causal=True)
    assert isinstance(captured, CaptureResult)
    data = json.loads(json.dumps(captured.to_dict()))
    assert [r["name"] for r in data["records"]] == ["blocks.0", "blocks.1"]
    assert data["records"][0]["weights"][1][2][3] == pytest.approx(
        captured[0].weights[1, 2, 3].tolist(), abs=1e-5
    )
    tokens = ["a", "b", "c", "d"]
    record = captured.record(1, source_tokens=tokens, output_tokens=tokens)
    assert isinstance(record, AttentionRecord)
    assert record.heads.shape == (4, 2, 4, 4)  # (T, L, H, S)
    assert record.heads[:, 1, 3] == pytest.approx(captured[1].weights[1, 3].numpy(), abs=1e-7)
    assert record.rollout == pytest.approx(captured.rollout()[1].numpy(), abs=1e-7)
    figure = captured.plot(1, 3, tmp_path / "map.png", index=1, source_tokens=tokens)
    assert (tmp_path / "map.png").stat().st_size > 0
    assert figure.axes[0].get_title() == "layer 1 (blocks.1), head 3"
    with pytest.raises(CaptureError, match="plot: layer 5 has no kept weights; kept layers"):
        captured.plot(5)
    page = captured.show(0)
    assert page is not None and "attnkit" in page.read_text(encoding="utf-8")
    page.unlink()


def test_groups_and_kinds_from_module_names():
    assert group_of("encoder.layer.3.attention.self") == "encoder.layer"
    assert group_of("model.decoder.layers.0.encoder_attn") == "model.decoder.layers"
    assert group_of("attn") == "" and group_of("") == ""
    for name in ("decoder.block.1.layer.1.EncDecAttention", "h.0.crossattention", "x.cross_attn"):
        assert kind_of(name) == "cross"
    assert kind_of("model.layers.0.self_attn") == "self"


def test_the_api_doc_example_runs(tmp_path, monkeypatch):
    """docs/API.md's capture section runs as written (test_api_docs.py runs every block of the
    file, in its slow tier)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "API.md").read_text(encoding="utf-8")
    section = text.split("## Any PyTorch model: its exact attention", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert blocks and "attnkit.capture(" in blocks[0]
    monkeypatch.chdir(tmp_path)
    namespace = {"attnkit": attnkit}
    for code in blocks:
        exec(compile(code, "docs/API.md", "exec"), namespace)  # noqa: S102 - the doc's own code
    assert (tmp_path / "encoder-layer1-head0.png").stat().st_size > 0
    assert namespace["captured"].stack().shape == (2, 2, 4, 6, 6)


def test_the_public_name():
    assert attnkit.capture is attnkit.api.capture
    assert "capture" in attnkit.__all__


def test_chosen_heads_take_their_own_rows_of_a_per_head_mask():
    """A mask (H, T, S) with a head axis but no batch axis: the heads chosen read their own."""
    torch.manual_seed(5)
    q, k = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4)
    mask = torch.rand(3, 5, 5) > 0.4
    mask[..., 0] = True  # every row keeps a key
    call = sdpa_call(q, k, k, attn_mask=mask)
    chosen = attention_weights(call, heads=[2, 0])
    expected = reference(q, k, mask[None])[:, [2, 0]]
    assert chosen.shape == (2, 2, 5, 5)
    assert torch.allclose(chosen.double(), expected, atol=TOL)
