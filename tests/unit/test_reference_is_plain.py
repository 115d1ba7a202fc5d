"""``reference`` is plain torch for every family, and the fast backends compute its function.

Every entry to speed code is counted: each C kernel call (a proxy in front of the built library of
:mod:`attnkit.accel.native`), each registered override handed out
(:mod:`attnkit.attention.overrides`), the fused recurrent step, the handwritten-backward loops and
``F.scaled_dot_product_attention``.
Under ``reference`` a training step (forward and backward) and decoding of the seq2seq RNN (every
registered attention with every decoder that holds it), the Transformer and each vision model count
none of them; under ``native`` the models a kernel covers do count some (so the counting can fail).
Then the Transformer and the vision models are compared with their reference under each fast
backend (the seq2seq RNN has its own harness: test_equivalence.py).
"""

from __future__ import annotations

import collections
import itertools

import pytest
import torch
import torch.nn.functional as F

from attnkit.accel import cells, loops, native, recurrence
from attnkit.accel.backend import REFERENCE, resolve
from attnkit.attention import overrides, qkv
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.decoding import beam_search, greedy_decode
from attnkit.models import show_attend_tell as sat
from attnkit.models.attention_pooling import AttentionPoolingClassifier
from attnkit.models.decoders import DECODERS, pairs_with
from attnkit.models.ram import RecurrentAttentionModel
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnkit.models.transformer import Transformer, TransformerConfig

SRC_V, TGT_V = 11, 10


class _CountingLibrary:
    """Stands in front of the kernel library: every ``attnkit_*`` call is counted, then made."""

    def __init__(self, lib, counts: collections.Counter):
        self._lib, self._counts = lib, counts

    def __getattr__(self, name):
        real = getattr(self._lib, name)

        def call(*args):
            self._counts[f"kernel:{name}"] += 1
            return real(*args)

        return call


@pytest.fixture
def counts(monkeypatch) -> collections.Counter:
    """A counter of every kernel call, override handed out and fast path taken."""
    found: collections.Counter = collections.Counter()
    lib = native.library()
    if lib is not None:
        monkeypatch.setitem(native._state, "lib", _CountingLibrary(lib, found))
    for name, implementation in list(overrides._registry.items()):
        monkeypatch.setitem(
            overrides._registry, name, _counted(f"override:{name}", implementation, found)
        )
    for module, name in (
        (cells, "fused_step"),
        (loops, "teacher_force"),
        (recurrence, "encode"),
        (recurrence, "over_target"),
    ):
        monkeypatch.setattr(module, name, _counted(f"path:{name}", getattr(module, name), found))
    sdpa = _counted("path:sdpa", F.scaled_dot_product_attention, found)
    monkeypatch.setattr(qkv.F, "scaled_dot_product_attention", sdpa)
    return found


def _counted(key: str, function, found: collections.Counter):
    def counted(*args, **kwargs):
        found[key] += 1
        return function(*args, **kwargs)

    return counted


def _seq2seq_batch():
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, SRC_V, (3, 5), generator=g)
    src[:, -1] = EOS_ID
    src[2, 3:] = PAD_ID
    src[2, 2] = EOS_ID
    tgt_in = torch.randint(4, TGT_V, (3, 4), generator=g)
    tgt_in[:, 0] = BOS_ID
    tgt_in[1, 3:] = PAD_ID
    return src, torch.tensor([5, 5, 3]), tgt_in


_RNN_MODELS = [
    (att, style)
    for att, style in itertools.product(Seq2SeqConfig.CHOICES["attention"], DECODERS)
    if pairs_with(style, att)
]


def _rnn(att: str, style: str) -> Seq2Seq:
    cfg = Seq2SeqConfig(
        attention=att,
        decoder=style,
        embedding_dim=6,
        encoder_hidden=4,
        bidirectional=True,
        decoder_hidden=8,
        attention_dim=6,
        heads=2,
        dropout=0.2,
    )
    return Seq2Seq(cfg, SRC_V, TGT_V)


def _transformer(dropout: float = 0.1) -> Transformer:
    cfg = TransformerConfig(
        embedding_dim=16, encoder_layers=1, decoder_layers=1, heads=2, ff_dim=24, dropout=dropout
    )
    return Transformer(cfg, SRC_V, TGT_V)


def _train_and_decode_seq2seq(model) -> None:
    """One forward and backward in training mode, then greedy and beam decoding."""
    src, lengths, tgt_in = _seq2seq_batch()
    logits, _ = model.train()(src, lengths, tgt_in)
    logits.logsumexp(-1).sum().backward()
    model.eval()
    greedy_decode(model, src, lengths, 4)
    beam_search(model, src, lengths, 4, beam_size=2)


def _images(b: int = 2) -> torch.Tensor:
    return torch.randn(b, 1, 16, 16, generator=torch.Generator().manual_seed(2))


def _reader() -> sat.ShowAttendTell:
    return sat.ShowAttendTell(channels=(8,), embed=4, hidden=8, attention_dim=6)


def _vision_outputs(model, train: bool = True) -> list[torch.Tensor]:
    """The model's outputs on a fixed batch, after a backward through them."""
    model.train(train)
    images = _images()
    if isinstance(model, sat.ShowAttendTell):
        inputs = torch.tensor([[sat.BOS, 3, 4], [sat.BOS, 5, 6]])
        out = model(images, inputs)
        outputs = [out.logits, out.weights]
    elif isinstance(model, RecurrentAttentionModel):
        out = model(images, sample=False)
        outputs = [out.log_probs, out.locations]
    else:
        out = model(images)
        outputs = [out.log_probs, out.weights]
    sum(o.sin().sum() for o in outputs if o.requires_grad).backward()
    return [o.detach() for o in outputs]


#: vision model -> (builder, whether a kernel covers it: SpatialAttention's additive scores)
VISION = {
    "show_attend_tell": (_reader, True),
    "attention_pooling": (
        lambda: AttentionPoolingClassifier(channels=(8,), attention_hidden=4),
        False,
    ),
    "ram": (
        lambda: RecurrentAttentionModel(
            glimpses=2, patch=4, glimpse_hidden=8, location_hidden=8, hidden=16
        ),
        False,
    ),
}


def _kernels_missing() -> str | None:
    why = native.unavailable()
    return None if why is None else f"the C kernels are not available here: {why}"


def _kernel_calls(counts: collections.Counter) -> int:
    return sum(n for key, n in counts.items() if key.startswith("kernel:"))


@pytest.mark.parametrize("att, style", _RNN_MODELS, ids=[f"{a}-{s}" for a, s in _RNN_MODELS])
def test_reference_runs_no_kernel_for_the_rnn_models(att, style, counts):
    torch.manual_seed(0)
    model = _rnn(att, style)
    model.set_backend(REFERENCE)
    _train_and_decode_seq2seq(model)
    assert not counts, dict(counts)


def test_reference_runs_no_kernel_for_the_transformer(counts):
    torch.manual_seed(0)
    model = _transformer()
    model.set_backend(REFERENCE)
    _train_and_decode_seq2seq(model)
    assert not counts, dict(counts)


@pytest.mark.parametrize("name", VISION)
def test_reference_runs_no_kernel_for_the_vision_models(name, counts):
    torch.manual_seed(0)
    model = VISION[name][0]()
    model.set_backend(REFERENCE)
    _vision_outputs(model)
    if isinstance(model, sat.ShowAttendTell):
        model.greedy(_images(), 3)
    assert not counts, dict(counts)


def test_outside_any_backend_scope_nothing_but_torch_runs(counts):
    """The kernels are opt-in: called outside a model's scope, the score function is torch's."""
    from attnkit.attention.scores import additive_scores

    q, k, v = torch.randn(2, 1, 8), torch.randn(2, 3, 8), torch.randn(8)
    additive_scores(q, k, v)
    assert native.additive_energies(q, k, v) is None
    assert not counts, dict(counts)


@pytest.mark.parametrize("family", ["rnn-bahdanau", "rnn-luong-dot", "transformer", *VISION])
def test_native_runs_the_kernels_where_they_cover_the_model(family, counts):
    """The same counting sees the kernels under ``native``: it would see them under reference."""
    if (why := _kernels_missing()) is not None:
        pytest.skip(why)
    torch.manual_seed(0)
    native_backend = resolve("native", "cpu")
    if family.startswith("rnn-"):
        att = family.removeprefix("rnn-")
        model = _rnn(att, next(s for s in DECODERS if pairs_with(s, att)))
    elif family == "transformer":
        model = _transformer()
    else:
        model = VISION[family][0]()
    model.set_backend(native_backend)
    if family in VISION:
        _vision_outputs(model)
        assert (_kernel_calls(counts) > 0) == VISION[family][1], dict(counts)
    else:
        _train_and_decode_seq2seq(model)
        assert _kernel_calls(counts) > 0, dict(counts)


# ---- the fast backends compute the reference function: the Transformer and the vision models


#: every backend but the reference (for the Transformer, ``compile`` compiles nothing: it runs as
#: ``fused`` does)
FAST = ("fused", "native", "compile")


def _transformer_run(backend_name: str):
    torch.manual_seed(0)
    model = _transformer(dropout=0.0)  # masks are drawn differently by different backends
    model.set_backend(resolve(backend_name, "cpu"))
    src, lengths, tgt_in = _seq2seq_batch()
    model.train()
    logits, _ = model(src, lengths, tgt_in)
    real = tgt_in != PAD_ID
    (logits.logsumexp(-1) * real).sum().backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    model.eval()
    greedy = greedy_decode(model, src, lengths, 4)
    beam = beam_search(model, src, lengths, 4, beam_size=2)
    return logits.detach()[real], grads, greedy, beam


@pytest.mark.parametrize("backend", FAST)
def test_transformer_fast_backends_compute_the_reference_function(backend):
    logits, grads, greedy, beam = _transformer_run(backend)
    ref_logits, ref_grads, ref_greedy, ref_beam = _transformer_run("reference")
    torch.testing.assert_close(logits, ref_logits, atol=1e-5, rtol=1e-4)
    for name, grad in ref_grads.items():
        torch.testing.assert_close(grads[name], grad, atol=1e-5, rtol=1e-4, msg=name)
    assert [h.tokens for h in greedy] == [h.tokens for h in ref_greedy]
    for got, want in zip(beam, ref_beam):
        assert [h.tokens for h in got] == [h.tokens for h in want]


@pytest.mark.parametrize("name", VISION)
@pytest.mark.parametrize("backend", ["native", "fused"])
def test_vision_fast_backends_compute_the_reference_function(name, backend):
    if backend == "native" and (why := _kernels_missing()) is not None:
        pytest.skip(why)
    results = []
    for backend_name in (backend, "reference"):
        torch.manual_seed(0)
        model = VISION[name][0]()
        model.set_backend(resolve(backend_name, "cpu"))
        outputs = _vision_outputs(model, train=False)  # eval: no dropout masks to compare
        grads = {n: p.grad for n, p in model.named_parameters()}
        results.append((outputs, grads))
    (outputs, grads), (ref_outputs, ref_grads) = results
    for got, want in zip(outputs, ref_outputs):
        torch.testing.assert_close(got, want, atol=5e-5, rtol=1e-4)
    for n, grad in ref_grads.items():
        if grad is not None:
            torch.testing.assert_close(grads[n], grad, atol=5e-5, rtol=1e-4, msg=n)
