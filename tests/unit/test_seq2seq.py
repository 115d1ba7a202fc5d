"""Seq2seq: stepping equals teacher forcing, padding never changes a result, padded sources get 0
attention, and the handwritten loops' own behaviour (dropout, where they apply). That every
backend computes the reference function, for every attention and decoder: test_equivalence.py."""

import dataclasses
import itertools

import pytest
import torch

from attnkit.accel.backend import REFERENCE, resolve
from attnkit.attention.modules import ATTENTION_TYPES, LuongAttention
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.errors import ConfigError
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig

SRC_V, TGT_V = 13, 11
STYLES = {
    "bahdanau": dict(decoder="bahdanau"),
    "luong-feed": dict(decoder="luong", input_feeding=True),
    "luong-nofeed": dict(decoder="luong", input_feeding=False),
}


def _cfg(attention, rnn="gru", style="bahdanau", layers=1, bidirectional=True, **kw):
    enc_hidden = 8 if bidirectional else 16  # memory width 16 == decoder width, so luong-dot works
    return Seq2SeqConfig(
        attention=attention,
        rnn=rnn,
        embedding_dim=8,
        encoder_hidden=enc_hidden,
        encoder_layers=layers,
        bidirectional=bidirectional,
        decoder_hidden=16,
        decoder_layers=layers,
        attention_dim=12,
        heads=2,
        dropout=0.0,
        **{**STYLES[style], **kw},
    )


def _model(cfg, seed=0):
    torch.manual_seed(seed)
    return Seq2Seq(cfg, SRC_V, TGT_V).eval()


def _batch(lengths=(6, 4, 1), t=5, seed=1):
    """A padded source batch (ids >= 4, EOS at the end of each row) and a padded target input."""
    g = torch.Generator().manual_seed(seed)
    s = max(lengths)
    src = torch.full((len(lengths), s), PAD_ID, dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, : n - 1] = torch.randint(4, SRC_V, (n - 1,), generator=g)
        src[i, n - 1] = EOS_ID
    tgt_in = torch.randint(4, TGT_V, (len(lengths), t), generator=g)
    tgt_in[:, 0] = BOS_ID
    return src, torch.tensor(lengths), tgt_in


def _stepwise(model, src, lengths, tgt_in):
    memory, state = model.encode(src, lengths)
    logits, weights = [], []
    for t in range(tgt_in.size(1)):
        lg, state, w = model.decoder.step(tgt_in[:, t], state, memory)
        logits.append(lg)
        weights.append(w)
    return torch.stack(logits, 1), torch.stack(weights, 1)


# every attention x {gru, lstm} x decoder style; 2 layers on the LSTM cases, a unidirectional
# encoder on the GRU + luong-nofeed ones
CASES = [
    pytest.param(att, rnn, style, id=f"{att}-{rnn}-{style}")
    for att, rnn, style in itertools.product(ATTENTION_TYPES, ("gru", "lstm"), STYLES)
]


def _case_cfg(att, rnn, style):
    return _cfg(
        att,
        rnn,
        style,
        layers=2 if rnn == "lstm" else 1,
        bidirectional=not (rnn == "gru" and style == "luong-nofeed"),
    )


@pytest.mark.parametrize("att, rnn, style", CASES)
def test_stepping_equals_teacher_forcing(att, rnn, style):
    model = _model(_case_cfg(att, rnn, style))
    src, lengths, tgt_in = _batch()
    with torch.no_grad():
        logits, weights = model(src, lengths, tgt_in)
        step_logits, step_weights = _stepwise(model, src, lengths, tgt_in)
    assert logits.shape == (3, 5, TGT_V)
    assert weights.shape == (3, 5, 6)
    torch.testing.assert_close(step_logits, logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(step_weights, weights, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("att, rnn, style", CASES)
def test_padding_changes_nothing_and_gets_zero_attention(att, rnn, style):
    model = _model(_case_cfg(att, rnn, style))
    src, lengths, tgt_in = _batch()
    with torch.no_grad():
        logits, weights = model(src, lengths, tgt_in)
        # padded positions of the source get exactly 0 and every row sums to 1
        pad = (src == PAD_ID)[:, None, :].expand_as(weights)
        assert torch.all(weights[pad] == 0.0)
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 5))
        for i, n in enumerate(lengths.tolist()):
            alone_logits, alone_weights = model(
                src[i : i + 1, :n], lengths[i : i + 1], tgt_in[i : i + 1]
            )
            torch.testing.assert_close(logits[i : i + 1], alone_logits, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(
                weights[i : i + 1, :, :n], alone_weights, atol=1e-5, rtol=1e-5
            )
        # extra PAD columns on the whole batch change nothing either
        wider = torch.cat([src, torch.full((3, 4), PAD_ID)], 1)
        wide_logits, wide_weights = model(wider, lengths, tgt_in)
        torch.testing.assert_close(wide_logits, logits, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(wide_weights[..., :6], weights, atol=1e-5, rtol=1e-5)
        assert torch.all(wide_weights[..., 6:] == 0.0)


def test_target_padding_does_not_change_earlier_positions():
    model = _model(_cfg("bahdanau", "gru", "bahdanau"))
    src, lengths, tgt_in = _batch()
    padded = torch.cat([tgt_in, torch.full((3, 3), PAD_ID)], 1)
    with torch.no_grad():
        logits, weights = model(src, lengths, tgt_in)
        logits_p, weights_p = model(src, lengths, padded)
    torch.testing.assert_close(logits_p[:, :5], logits)
    torch.testing.assert_close(weights_p[:, :5], weights)


def test_decoder_style_auto():
    assert Seq2SeqConfig(attention="bahdanau").decoder_style == "bahdanau"
    assert Seq2SeqConfig(attention="luong-concat").decoder_style == "luong"
    assert Seq2SeqConfig(attention="luong-concat", decoder="bahdanau").decoder_style == "bahdanau"
    assert Seq2SeqConfig(encoder_hidden=8, bidirectional=True).memory_dim == 16


def test_luong_dot_with_mismatched_widths_is_config_error():
    cfg = Seq2SeqConfig(
        attention="luong-dot",
        encoder_hidden=8,
        bidirectional=True,
        decoder_hidden=12,
        embedding_dim=4,
        attention_dim=4,
        dropout=0.0,
    )
    with pytest.raises(ConfigError, match="luong-dot"):
        Seq2Seq(cfg, SRC_V, TGT_V)


def test_gradients_flow_to_encoder_and_attention():
    model = _model(_cfg("luong-concat", "lstm", "luong-feed", layers=2)).train()
    src, lengths, tgt_in = _batch()
    logits, _ = model(src, lengths, tgt_in)
    logits.logsumexp(-1).sum().backward()
    for name in ("encoder.rnn.weight_ih_l0", "decoder.attention.v", "decoder.bridge.weight"):
        grad = dict(model.named_parameters())[name].grad
        assert grad is not None and grad.abs().sum() > 0, name


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(
    "att, rnn, style",
    [
        ("bahdanau", "gru", "bahdanau"),
        ("luong-general", "lstm", "luong-feed"),
        ("luong-general", "gru", "luong-feed"),
        ("bahdanau", "lstm", "luong-nofeed"),
    ],
)
@pytest.mark.parametrize("layers", [1, 2])
def test_fused_decoder_on_cuda_matches_cpu_in_training(att, rnn, style, layers):
    """What ``auto`` runs on CUDA (nn.GRU/nn.LSTM steps, one RNN call over the target) gives the
    CPU's loss and gradients (the native backend there)."""
    results = []
    for device in ("cpu", "cuda"):
        model = (
            _model(_cfg(att, rnn, style, layers=layers)).train().to(device)
        )  # dropout 0: deterministic
        model.set_backend(resolve("auto", device))
        src, lengths, tgt_in = (x.to(device) for x in _batch())
        logits, _ = model(src, lengths, tgt_in)
        logits.logsumexp(-1).sum().backward()
        results.append(
            (
                logits.detach().cpu(),
                {n: p.grad.cpu() for n, p in model.named_parameters() if p.grad is not None},
            )
        )
    (cpu_logits, cpu_grads), (cuda_logits, cuda_grads) = results
    torch.testing.assert_close(cuda_logits, cpu_logits, atol=2e-3, rtol=2e-3)
    assert cuda_grads.keys() == cpu_grads.keys() and "decoder.rnn.weight_hh_l0" in cuda_grads
    for name, grad in cpu_grads.items():
        torch.testing.assert_close(cuda_grads[name], grad, atol=2e-3, rtol=2e-3, msg=name)


@pytest.mark.parametrize("requested", ["fused", "compile", "native"])
def test_what_cuda_backends_compute_is_the_reference_function(requested, monkeypatch):
    """The backends resolved for CUDA step through the RNN module and keep the one-call path over
    the target; run on the CPU, they give the reference's logits and gradients (the CUDA run
    itself is compared in the test above, where a GPU exists)."""
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fn)  # its step is the eager one
    backend = resolve(requested, "cuda")
    assert backend.cell == "nn" and backend.whole_target and not backend.handwritten_loop
    src, lengths, tgt_in = _batch()
    for style in STYLES:
        results = []
        for b in (backend, REFERENCE):
            model = _model(_cfg("luong-general", "lstm", style, layers=2)).double().train()
            model.set_backend(b)
            results.append(_train_once(model, (src, lengths, tgt_in)))
        (logits_a, weights_a, grads_a), (logits_b, weights_b, grads_b) = results
        torch.testing.assert_close(logits_a, logits_b, atol=1e-12, rtol=1e-10)
        torch.testing.assert_close(weights_a, weights_b, atol=1e-12, rtol=1e-10)
        for name, grad in grads_b.items():
            torch.testing.assert_close(grads_a[name], grad, atol=1e-12, rtol=1e-10, msg=name)


def test_initial_state_shapes():
    model = _model(_cfg("luong-general", "lstm", "luong-feed", layers=2))
    src, lengths, _ = _batch()
    memory, state = model.encode(src, lengths)
    assert memory.states.shape == (3, 6, 16)
    assert memory.mask.tolist() == (src != PAD_ID).tolist()
    h, c = state.rnn
    assert h.shape == c.shape == (2, 3, 16)
    assert state.feed.shape == (3, 16) and torch.all(state.feed == 0)
    # padded encoder states are zero (packed sequence), so nothing leaks through the values
    assert torch.all(memory.states[2, 1:] == 0)


def _native():
    """The native backend's handwritten loops, with the kernels where this machine has them."""
    backend = resolve("native", "cpu")
    assert backend.handwritten_loop
    return backend


def _padded_targets(tgt_in, lengths):
    """tgt_in with PAD past each row's length."""
    tgt_in = tgt_in.clone()
    tgt_in[torch.arange(tgt_in.size(1)).unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)] = PAD_ID
    return tgt_in


def _train_once(model, batch, seed=5):
    """Logits, weights and every parameter's gradient of one teacher-forced pass (dropout drawn from
    ``seed``), with a loss over the non-pad target positions, as training has."""
    src, lengths, tgt_in = batch
    torch.manual_seed(seed)
    logits, weights = model(src, lengths, tgt_in)
    # a loss that weighs every position differently, so a gradient sent to the wrong step shows
    position_weights = (
        torch.arange(logits.size(0) * logits.size(1), dtype=logits.dtype)
        .view(logits.shape[:2])
        .sin()
    )
    position_weights = position_weights * (tgt_in != PAD_ID)
    (logits.logsumexp(-1) * position_weights).sum().backward()
    return (
        logits.detach(),
        weights,
        {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None},
    )


@pytest.mark.parametrize("style", ["luong-feed", "bahdanau"])
@pytest.mark.parametrize("rnn", ["gru", "lstm"])
@pytest.mark.parametrize("att", ["luong-concat", "scaled-dot"])  # additive and dot scores
def test_handwritten_backward_loop_draws_the_step_loops_dropout(att, rnn, style):
    """With dropout on, the one-node teacher-forcing loop gives the fused step loop's logits,
    weights and gradients (float64): both draw every step's mask in one call, in the same order.
    Without dropout every backend is compared with the reference in test_equivalence.py."""
    cfg = _cfg(att, rnn, style)
    cfg.dropout = 0.3
    src, lengths, tgt_in = _batch(lengths=(6, 4, 1, 3), t=5)
    tgt_in = _padded_targets(tgt_in, (3, 5, 1, 4))
    results = []
    # the fused step loop of the same backend: it draws its dropout masks as the loop does
    step_loop = dataclasses.replace(_native(), handwritten_loop=False)
    with torch.autograd.set_grad_enabled(True):
        for handwritten in (True, False):
            model = _model(cfg).double().train()
            model.set_backend(_native() if handwritten else step_loop)
            assert (model.decoder.loop_spec() is not None) == handwritten
            results.append(_train_once(model, (src, lengths, tgt_in)))
    (logits_a, weights_a, grads_a), (logits_b, weights_b, grads_b) = results
    real = tgt_in != PAD_ID  # past a target's end the loop computes nothing; the loss ignores it
    torch.testing.assert_close(logits_a[real], logits_b[real], atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(weights_a[real], weights_b[real], atol=1e-12, rtol=1e-10)
    assert torch.all(weights_a[~real] == 0)
    assert grads_a.keys() == grads_b.keys() and "decoder.rnn.weight_hh_l0" in grads_a
    for name, grad in grads_b.items():
        torch.testing.assert_close(grads_a[name], grad, atol=1e-12, rtol=1e-10, msg=name)


def _loop_inputs(active, feed0=True):
    """LoopInputs and LoopWeights of a GRU loop over T=2 steps, B=2 rows, S=3, H=4."""
    from attnkit.accel.loops import LoopInputs, LoopWeights

    h = torch.zeros(2, 4)
    inputs = LoopInputs(
        x_proj=torch.zeros(2, 2, 12),
        h0=h,
        c0=None,
        keys=torch.zeros(2, 3, 4),
        projected=torch.zeros(2, 3, 4),
        mask=torch.ones(2, 3, dtype=torch.bool),
        keep=None,
        active=active,
        feed0=h if feed0 else None,
    )
    weights = LoopWeights(
        w_ih_rest=torch.zeros(12, 4),
        w_hh=torch.zeros(12, 4),
        b_hh=torch.zeros(12),
        w_query=None,
        v=None,
        w_combine=torch.zeros(4, 8),
        b_combine=torch.zeros(4),
    )
    return inputs, weights


def test_loop_rejects_active_rows_that_grow():
    with pytest.raises(ValueError, match="must not increase"):
        _loop_inputs((1, 2))


def test_loop_rejects_inputs_of_the_other_style():
    from attnkit.accel.loops import LoopSpec, run_bahdanau_loop, run_loop

    spec = LoopSpec(lstm=False, additive=False)
    inputs, weights = _loop_inputs((2, 1), feed0=False)
    with pytest.raises(ValueError, match="feed0"):
        run_loop(spec, inputs, weights)
    with pytest.raises(ValueError, match="comb_x"):
        run_bahdanau_loop(spec, inputs, weights)


def test_loop_arguments_round_trip_through_the_autograd_function():
    """The tensors a loop's Function is given come back as the same dataclasses, absent ones as
    None, and every tensor field has its place among the gradients."""
    from attnkit.accel.loops import LoopInputs, LoopWeights
    from attnkit.accel.loops.spec import spread, unpack

    for cls, not_tensors in ((LoopInputs, {"active"}), (LoopWeights, set())):
        assert set(cls.TENSORS) == {f.name for f in dataclasses.fields(cls)} - not_tensors
    inputs, weights = _loop_inputs((2, 1))
    tensors = spread(inputs, weights)
    assert len(tensors) == len(LoopInputs.TENSORS) + len(LoopWeights.TENSORS)
    inputs_back, weights_back = unpack(tensors, inputs.active)
    for original, back in ((inputs, inputs_back), (weights, weights_back)):
        for name in type(original).TENSORS:
            assert (getattr(back, name) is None) == (getattr(original, name) is None), name
            if getattr(original, name) is not None:
                assert getattr(back, name) is getattr(original, name), name
    assert inputs_back.active == (2, 1)
    grads = LoopInputs.gradients(h0=inputs.h0)
    assert grads[LoopInputs.TENSORS.index("h0")] is inputs.h0
    assert sum(g is not None for g in grads) == 1
    with pytest.raises(TypeError, match="no tensor field"):
        LoopWeights.gradients(w_feed=inputs.h0)


@pytest.mark.parametrize(
    "att, rnn, style, layers",
    [
        ("multihead", "gru", "luong-feed", 1),
        ("bahdanau", "lstm", "luong-feed", 2),
        ("multihead", "gru", "bahdanau", 1),
        ("bahdanau", "gru", "bahdanau", 2),
        ("luong-general", "gru", "luong-nofeed", 1),
    ],
)
def test_loop_is_not_used_where_it_does_not_apply(att, rnn, style, layers):
    model = _model(_cfg(att, rnn, style, layers=layers))
    model.set_backend(_native())
    assert model.decoder.loop_spec() is None


@pytest.mark.parametrize("style", ["luong-feed", "bahdanau"])
def test_every_attention_declaring_its_scores_gets_the_loop(style):
    """One layer, native backend: the loop applies exactly where the attention declares scores."""
    declaring = []
    for att in ATTENTION_TYPES:
        model = _model(_cfg(att, "gru", style))
        model.set_backend(_native())
        declares = model.decoder.attention.loop_spec() is not None
        assert (model.decoder.loop_spec() is not None) == declares, att
        declaring += [att] if declares else []
    assert {"bahdanau", "luong-concat", "luong-general", "scaled-dot"} <= set(declaring)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("rnn, layers", [("gru", 1), ("lstm", 1), ("gru", 2), ("lstm", 2)])
def test_handwritten_encoder_equals_packed_rnn(rnn, layers, bidirectional):
    """The encoder's handwritten-backward layers give the packed nn.GRU/nn.LSTM's states, final
    state and gradients, padding included (float64; dropout on for one layer, where both draw
    alike)."""
    cfg = _cfg("bahdanau", rnn, "luong-feed", layers=layers, bidirectional=bidirectional)
    cfg.dropout = 0.3 if layers == 1 else 0.0
    src, lengths, _ = _batch(lengths=(6, 4, 1, 3))
    results = []
    for handwritten in (True, False):
        model = _model(cfg).double().train()
        model.set_backend(_native() if handwritten else REFERENCE)
        torch.manual_seed(5)
        states, final = model.encoder(src, lengths)
        g = torch.Generator().manual_seed(7)
        (states * torch.randn(states.shape, generator=g, dtype=states.dtype)).sum().backward(
            retain_graph=True
        )
        (final * torch.randn(final.shape, generator=g, dtype=final.dtype)).sum().backward()
        results.append(
            (
                states.detach(),
                final.detach(),
                {
                    n: p.grad.clone()
                    for n, p in model.encoder.named_parameters()
                    if p.grad is not None
                },
            )
        )
    (states_a, final_a, grads_a), (states_b, final_b, grads_b) = results
    torch.testing.assert_close(states_a, states_b, atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(final_a, final_b, atol=1e-12, rtol=1e-10)
    assert torch.all(states_a[src == PAD_ID] == 0)
    assert grads_a.keys() == grads_b.keys() and len(grads_a) == len(
        list(model.encoder.parameters())
    )
    for name, grad in grads_b.items():
        torch.testing.assert_close(grads_a[name], grad, atol=1e-12, rtol=1e-10, msg=name)


class _HalvedLuong(LuongAttention):
    """A subclass that changes the scores and declares nothing to the fast loop."""

    def scores(self, query, projected):
        return super().scores(query, projected) * 0.5


@pytest.mark.parametrize("style", ["luong-feed", "bahdanau"])
def test_subclassed_attention_trains_its_own_function_on_the_native_backend(style):
    """A LuongAttention subclass overriding scores() gets no loop spec, so the native backend trains
    the function it defines: logits and gradients equal the reference path's with the override."""
    cfg = _cfg("luong-general", "gru", style)
    # no dropout: the reference draws its masks with F.dropout, the native backend its own way
    # (test_handwritten_backward_loop_draws_the_step_loops_dropout compares those)
    cfg.dropout = 0.0
    src, lengths, tgt_in = _batch(lengths=(6, 4, 1, 3), t=5)
    tgt_in = _padded_targets(tgt_in, (3, 5, 1, 4))
    results = {}
    for name, backend, subclass in (
        ("native", _native(), True),
        ("reference", REFERENCE, True),
        ("plain", REFERENCE, False),
    ):
        model = _model(cfg).double().train()
        if subclass:
            plain = model.decoder.attention
            model.decoder.attention = _HalvedLuong("general", 16, 16).double()
            model.decoder.attention.load_state_dict(plain.state_dict())
        model.set_backend(backend)
        assert model.decoder.loop_spec() is None or not subclass
        results[name] = _train_once(model, (src, lengths, tgt_in))
    real = tgt_in != PAD_ID
    (logits_n, _, grads_n), (logits_r, _, grads_r) = results["native"], results["reference"]
    torch.testing.assert_close(logits_n[real], logits_r[real], atol=1e-12, rtol=1e-10)
    for name, grad in grads_r.items():
        torch.testing.assert_close(grads_n[name], grad, atol=1e-12, rtol=1e-10, msg=name)
    # the override matters: the unmodified attention gives other logits
    assert not torch.allclose(results["plain"][0][real], logits_r[real], atol=1e-6)
