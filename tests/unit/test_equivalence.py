"""Every backend computes the reference model's function.

For every attention a model may name (the registered ones and ``none``) x registered decoder that
holds it (:func:`attnkit.models.decoders.pairs_with`) x cell x input feeding (where the config says
it applies) x decoder layers, each backend available here gives the ``reference`` backend's
teacher-forced logits and attention weights, the gradient of a loss with respect to every
parameter, and the greedy and beam-search (size 3) outputs. The combinations are read from the
registries (Seq2SeqConfig.CHOICES, DECODERS, Seq2SeqConfig.APPLIES), so a newly registered
attention or decoder is compared here without editing this file.

Float64 where the backend allows it (tight tolerances); the C kernels take float32 only, so the
``native-f32`` backend is compared in float32, to float32 tolerances.
"""

from __future__ import annotations

import functools
import itertools
import shutil

import pytest
import torch

from attnkit.accel import loops, native
from attnkit.accel.backend import BACKENDS, REFERENCE, resolve
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.decoding import beam_search, greedy_decode
from attnkit.models.decoders import DECODERS, pairs_with
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig

SRC_V, TGT_V = 11, 10
SRC_LENGTHS = (5, 3, 1, 4)
TGT_LENGTHS = (3, 5, 1, 4)  # not longest first: the handwritten loop sorts and restores
MAX_LEN = 6  # decoding steps

_FEEDING_STYLES = Seq2SeqConfig.APPLIES["input_feeding"][1]  # the decoders that read it
_ATTENTIONS = Seq2SeqConfig.CHOICES["attention"]  # every registered attention, and none


def _feeding_options(style: str) -> tuple[bool | None, ...]:
    return (True, False) if style in _FEEDING_STYLES else (None,)


def _model_id(att, style, feeding, rnn, layers) -> str:
    feed = "" if feeding is None else ("-feed" if feeding else "-nofeed")
    return f"{att}-{style}{feed}-{rnn}-L{layers}"


#: (attention, decoder, input feeding or None, cell, decoder layers): every combination
MODELS = [
    (att, style, feeding, rnn, layers)
    for att, style in itertools.product(_ATTENTIONS, DECODERS)
    if pairs_with(style, att)
    for feeding in _feeding_options(style)
    for rnn, layers in itertools.product(("gru", "lstm"), (1, 2))
]

#: torch.compile takes 20-80 s per model on a 2-core CPU (inductor compiles a graph for training,
#: forward and backward, and one for decoding), so the compiled step is compared on one model per
#: registered decoder, marked slow: it compiles the same ``_step`` whatever the attention, cell or
#: depth, and the other backends cover those.
COMPILE_MODELS = [
    (
        next(a for a in _ATTENTIONS if pairs_with(style, a)),
        style,
        _feeding_options(style)[0],
        "gru",
        1,
    )
    for style in DECODERS
]


def _kernels_missing() -> str | None:
    why = native.unavailable()
    return None if why is None else f"the C kernels are not available here: {why}"


def _compiler_missing() -> str | None:
    found = any(shutil.which(cc) for cc in ("g++", "c++", "clang++"))
    return None if found else "torch.compile needs a C++ compiler for the CPU, none found"


#: backend -> (dtype, tolerances of logits/weights/gradients, what must exist to run it)
FLOAT64 = dict(atol=1e-10, rtol=1e-8)
FLOAT32 = dict(atol=5e-5, rtol=1e-4)
BACKEND_RUNS = {
    "fused": (torch.float64, FLOAT64, lambda: None),
    "native": (torch.float64, FLOAT64, lambda: None),  # the handwritten loops, in torch
    "native-f32": (torch.float32, FLOAT32, _kernels_missing),  # the loops with the C kernels
    "compile": (torch.float64, FLOAT64, _compiler_missing),
}
assert {name.removesuffix("-f32") for name in BACKEND_RUNS} == set(BACKENDS) - {"auto", "reference"}

CASES = [
    pytest.param(
        model,
        backend,
        id=f"{_model_id(*model)}-{backend}",
        marks=[pytest.mark.slow] if backend == "compile" else [],
    )
    for backend in BACKEND_RUNS
    for model in (COMPILE_MODELS if backend == "compile" else MODELS)
]


def _config(att, style, feeding, rnn, layers) -> Seq2SeqConfig:
    extra = {} if feeding is None else {"input_feeding": feeding}
    return Seq2SeqConfig(
        attention=att,
        decoder=style,
        rnn=rnn,
        embedding_dim=6,
        encoder_hidden=4,  # x2 directions = the decoder width, so luong-dot applies
        bidirectional=True,
        decoder_hidden=8,
        decoder_layers=layers,
        attention_dim=6,
        heads=2,
        dropout=0.0,  # the reference draws its masks per step, the others for all steps at once
        **extra,
    )


def _batch():
    """Padded sources (ids >= 4, EOS last) and padded targets of other lengths."""
    g = torch.Generator().manual_seed(1)
    src = torch.full((len(SRC_LENGTHS), max(SRC_LENGTHS)), PAD_ID, dtype=torch.long)
    tgt_in = torch.full((len(TGT_LENGTHS), max(TGT_LENGTHS)), PAD_ID, dtype=torch.long)
    for i, (n, m) in enumerate(zip(SRC_LENGTHS, TGT_LENGTHS)):
        src[i, : n - 1] = torch.randint(4, SRC_V, (n - 1,), generator=g)
        src[i, n - 1] = EOS_ID
        tgt_in[i, :m] = torch.randint(4, TGT_V, (m,), generator=g)
        tgt_in[i, 0] = BOS_ID
    return src, torch.tensor(SRC_LENGTHS), tgt_in


def _run(model_key, backend, dtype):
    """Everything compared, computed with ``backend``: (logits, weights) on the real target
    positions, {parameter: gradient}, greedy hypotheses, beam hypotheses; and whether the
    decoder declared the handwritten loop."""
    torch.manual_seed(0)
    model = Seq2Seq(_config(*model_key), SRC_V, TGT_V).to(dtype).train()
    model.set_backend(backend)
    src, lengths, tgt_in = _batch()
    real = tgt_in != PAD_ID  # past a target's end the handwritten loop computes nothing
    logits, weights = model(src, lengths, tgt_in)
    # every position weighed differently, so a gradient sent to the wrong step shows
    position_weights = torch.arange(real.numel(), dtype=dtype).view(real.shape).sin() * real
    (logits.logsumexp(-1) * position_weights).sum().backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    model.eval()
    greedy = greedy_decode(model, src, lengths, MAX_LEN)
    beam = beam_search(model, src, lengths, MAX_LEN, beam_size=3, n_best=2)
    outputs = (logits.detach()[real], weights.detach()[real])
    return outputs, grads, greedy, beam, model.decoder.loop_spec() is not None


@functools.cache
def _reference(model_key, dtype):
    return _run(model_key, REFERENCE, dtype)


def _assert_same_hypotheses(got, want, what):
    assert [h.tokens for h in got] == [h.tokens for h in want], what
    assert [h.finished for h in got] == [h.finished for h in want], what
    for g, w in zip(got, want):
        assert g.score == pytest.approx(w.score, abs=1e-5), what
        torch.testing.assert_close(g.weights, w.weights, atol=1e-5, rtol=1e-4, msg=what)


@pytest.mark.parametrize("model_key, backend_name", CASES)
def test_backend_computes_the_reference_function(model_key, backend_name, monkeypatch):
    dtype, tol, missing = BACKEND_RUNS[backend_name]
    if (why := missing()) is not None:
        pytest.skip(why)
    backend = resolve(backend_name.removesuffix("-f32"), "cpu", dtype)
    loop_calls = []
    teacher_force = loops.teacher_force
    monkeypatch.setattr(
        loops, "teacher_force", lambda *a: loop_calls.append(1) or teacher_force(*a)
    )

    (logits, weights), grads, greedy, beam, loop_declared = _run(model_key, backend, dtype)
    (ref_logits, ref_weights), ref_grads, ref_greedy, ref_beam, _ = _reference(model_key, dtype)

    torch.testing.assert_close(logits, ref_logits, **tol, msg="logits")
    torch.testing.assert_close(weights, ref_weights, **tol, msg="attention weights")
    assert grads.keys() == ref_grads.keys()
    for name, grad in ref_grads.items():
        assert grad is not None and grads[name] is not None, name
        torch.testing.assert_close(grads[name], grad, **tol, msg=name)
    _assert_same_hypotheses(greedy, ref_greedy, "greedy")
    for got, want in zip(beam, ref_beam):
        _assert_same_hypotheses(got, want, "beam")
    assert len(loop_calls) == loop_declared  # the handwritten loop ran where it was declared
