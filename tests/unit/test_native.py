"""The compiled additive-energies kernel: the same numbers as torch, declining where it does not
apply, and the torch fallback when it cannot be built."""

import hashlib
import os
import stat
import warnings

import pytest
import torch

from attnkit.accel import native
from attnkit.attention.scores import additive_scores
from attnkit.data.vocab import BOS_ID, EOS_ID, PAD_ID
from attnkit.decoding.beam import beam_search
from attnkit.decoding.greedy import greedy_decode
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig

needs_kernel = pytest.mark.skipif(
    native.library() is None,
    reason="the native kernel cannot be built here (needs x86-64 with AVX2 and a C "
    "compiler, and ATTNKIT_NATIVE not 0)",
)


@pytest.fixture(autouse=True)
def _kernels_allowed():
    """The kernels are opt-in: these tests call them as a backend scope allowing them would."""
    with native.allowed():
        yield


def _torch_energies(q, k, v):
    return torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3)) @ v


def _inputs(b, t, s, a, scale=2.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(b, t, a, generator=g) * scale,
        torch.randn(b, s, a, generator=g) * scale,
        torch.randn(a, generator=g),
    )


@needs_kernel
@pytest.mark.parametrize(
    "shape", [(3, 1, 7, 256), (2, 4, 5, 13), (1, 1, 1, 8), (5, 2, 3, 3), (64, 1, 17, 40)]
)
def test_kernel_equals_torch(shape):
    """Scores and the kept tanh equal torch's, for widths with and without a remainder after the
    8-wide vector loop, several queries per row (T > 1) and a single source position."""
    q, k, v = _inputs(*shape)
    b, t, s, a = shape
    hidden = torch.full((b, t, s, a), float("nan"))
    scores = native.additive_energies(q, k, v, hidden)
    assert scores.shape == (b, t, s)
    torch.testing.assert_close(scores, _torch_energies(q, k, v), atol=3e-6, rtol=1e-5)
    torch.testing.assert_close(
        hidden, torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3)), atol=4e-7, rtol=0
    )
    torch.testing.assert_close(
        native.additive_energies(q, k, v), scores, atol=0, rtol=0
    )  # same without hidden


@needs_kernel
def test_kernel_tanh_saturates_and_keeps_small_values():
    """Far out it is within 3e-7 of +-1 and never beyond (1 - tanh^2, its derivative, stays >= 0);
    near zero it keeps tanh(x) ~ x to relative 1e-6; at 0 it is 0."""
    x = torch.tensor([-1e4, -40.0, -9.0, -1e-3, -1e-6, 0.0, 1e-6, 1e-3, 9.0, 40.0, 1e4])
    q = x.view(1, 1, -1)
    hidden = torch.empty(1, 1, 1, x.numel())
    native.additive_energies(q, torch.zeros(1, 1, x.numel()), torch.ones(x.numel()), hidden)
    got = hidden.view(-1)
    assert got.abs().max() <= 1 and got[5] == 0
    for i in (0, 1, -2, -1):
        assert abs(abs(float(got[i])) - 1) < 3e-7 and got[i].sign() == x[i].sign()
    torch.testing.assert_close(got, torch.tanh(x.double()).float(), atol=3e-7, rtol=1e-6)


@needs_kernel
@pytest.mark.parametrize("width", [8, 11])  # the vector loop and the scalar remainder
def test_kernel_propagates_nan_and_saturates_infinities(width):
    """A NaN in q + k gives NaN, as torch.tanh does (a diverging model must not look healthy); +-inf
    gives +-1."""
    q = torch.zeros(1, 1, width)
    k = torch.zeros(1, 3, width)
    k[0, 0, width - 1] = float("nan")
    k[0, 1, width - 1] = float("inf")
    k[0, 2, width - 1] = -float("inf")
    hidden = torch.empty(1, 1, 3, width)
    scores = native.additive_energies(q, k, torch.ones(width), hidden)
    assert torch.isnan(scores[0, 0, 0]) and torch.isnan(hidden[0, 0, 0, -1])
    assert abs(float(hidden[0, 0, 1, -1]) - 1) < 3e-7 and abs(float(hidden[0, 0, 2, -1]) + 1) < 3e-7
    assert torch.isfinite(scores[0, 0, 1:]).all()


@needs_kernel
def test_kernel_declines_what_it_does_not_cover():
    q, k, v = _inputs(2, 1, 3, 8)
    assert (
        native.additive_energies(q.double(), k.double(), v.double()) is None
    )  # float64: torch keeps its precision
    assert (
        native.additive_energies(q.transpose(0, 1).contiguous().transpose(0, 1), k, v) is not None
    )
    assert native.additive_energies(q.expand(2, 2, 8), k, v) is None  # not contiguous
    assert native.additive_energies(q, k[:1], v) is None  # keys for another batch size
    assert native.additive_energies(q, k, v[:4]) is None  # width mismatch
    assert native.additive_energies(q, k, v, torch.empty(2, 1, 3, 7)) is None  # wrong hidden shape
    with torch.enable_grad():
        assert (
            native.additive_energies(q, k, v.requires_grad_()) is None
        )  # autograd must see the computation
    with torch.no_grad():
        assert native.additive_energies(q, k, v) is not None  # ... unless it is not recording


@needs_kernel
@pytest.mark.parametrize("wanted", ["qkv", "k", "v", "q"])
@pytest.mark.parametrize("shape", [(4, 3, 6, 16), (2, 1, 9, 13)])
def test_additive_scores_through_the_kernel_give_torch_values_and_gradients(shape, wanted):
    """With gradients wanted (of all three inputs or one), additive_scores runs the kernel inside
    its own autograd node; its scores and the gradients equal torch's autograd of the plain
    expression."""
    results = []
    for use_kernel in (True, False):
        q, k, v = (x.requires_grad_(name in wanted) for name, x in zip("qkv", _inputs(*shape)))
        with torch.enable_grad():
            if use_kernel:
                scores = additive_scores(q, k, v)
                assert type(scores.grad_fn).__name__.startswith("KernelAdditiveScores")
            else:
                with native.disabled():
                    scores = additive_scores(q, k, v)
            weights = torch.linspace(-1, 1, scores.numel()).view_as(
                scores
            )  # every score weighed differently
            (scores * weights).sum().backward()
        results.append((scores.detach(), q.grad, k.grad, v.grad))
    for name, got, want in zip("sqkv", *results):
        if name in wanted + "s":
            torch.testing.assert_close(got, want, atol=3e-5, rtol=1e-4, msg=name)
        else:
            assert got is None and want is None
    with torch.inference_mode():  # no autograd: the kernel alone
        q, k, v = _inputs(*shape)
        torch.testing.assert_close(additive_scores(q, k, v), results[1][0], atol=3e-6, rtol=1e-5)


def test_no_compiler_falls_back_to_torch(monkeypatch, tmp_path):
    """A failed build is not an error: the kernel reports None and the scores come from torch."""
    monkeypatch.setattr(native, "_state", {})
    monkeypatch.setenv("ATTNKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "false")  # a compiler that always fails
    q, k, v = _inputs(2, 1, 5, 8)
    if native.enabled():
        assert native.library() is None
        assert list(tmp_path.iterdir()) == []  # nothing half-written left behind
    assert native.additive_energies(q, k, v) is None
    with torch.no_grad():
        torch.testing.assert_close(
            additive_scores(q, k, v), _torch_energies(q, k, v), atol=1e-6, rtol=1e-6
        )


@needs_kernel
def test_a_broken_cached_library_is_built_again(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "_state", {})
    monkeypatch.setenv("ATTNKIT_CACHE_DIR", str(tmp_path))
    target = native.library_path(native._compiler())
    target.write_bytes(b"not a shared library")
    assert native.library() is not None
    assert target.read_bytes() != b"not a shared library"
    q, k, v = _inputs(2, 1, 5, 8)
    torch.testing.assert_close(
        native.additive_energies(q, k, v), _torch_energies(q, k, v), atol=2e-6, rtol=1e-5
    )


@needs_kernel
def test_declines_while_torch_compile_traces(monkeypatch):
    q, k, v = _inputs(2, 1, 5, 8)
    assert native.covers(q, k, v)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert not native.covers(q, k, v) and native.additive_energies(q, k, v) is None


@needs_kernel
def test_declines_tensor_subclasses():
    class Tagged(torch.Tensor):
        pass

    q, k, v = _inputs(2, 1, 5, 8)
    assert not native.covers(q.as_subclass(Tagged), k, v)
    assert native.covers(q, k, torch.nn.Parameter(v))  # parameters are plain tensors to the kernel


@needs_kernel
def test_cc_may_carry_arguments(monkeypatch, tmp_path):
    """CC="env gcc" (a launcher and a compiler, as with ccache) builds the kernel."""
    real = native._compiler()
    monkeypatch.setattr(native, "_state", {})
    monkeypatch.setenv("ATTNKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", f"env {' '.join(real)}")
    assert native._compiler() == ["env", *real]
    assert native.library() is not None
    assert len(list(tmp_path.glob("kernels-*.so"))) == 1


def test_disabled_block_declines_then_restores():
    q, k, v = _inputs(2, 1, 5, 8)
    available = native.library() is not None
    with native.disabled():
        assert native.additive_energies(q, k, v) is None
        with native.disabled():
            pass
        assert native.additive_energies(q, k, v) is None  # still off after a nested block
    assert (native.additive_energies(q, k, v) is not None) == available


def test_switched_off_by_environment(monkeypatch):
    monkeypatch.setattr(native, "_state", {})
    monkeypatch.setenv("ATTNKIT_NATIVE", "0")
    assert not native.enabled()
    assert native.library() is None
    q, k, v = _inputs(2, 1, 5, 8)
    assert native.additive_energies(q, k, v) is None


def _model(decoder="luong", rnn="gru"):
    cfg = Seq2SeqConfig(
        attention="bahdanau",
        decoder=decoder,
        rnn=rnn,
        embedding_dim=16,
        encoder_hidden=16,
        decoder_hidden=24,
        attention_dim=20,
        dropout=0.0,
    )
    torch.manual_seed(0)
    return Seq2Seq(cfg, 15, 13)


def _batch():
    g = torch.Generator().manual_seed(3)
    lengths = torch.tensor([7, 5, 3, 2])
    src = torch.full((4, 7), PAD_ID, dtype=torch.long)
    for i, n in enumerate(lengths.tolist()):
        src[i, : n - 1] = torch.randint(4, 15, (n - 1,), generator=g)
        src[i, n - 1] = EOS_ID
    tgt_in = torch.randint(4, 13, (4, 6), generator=g)
    tgt_in[:, 0] = BOS_ID
    tgt_in[2, 4:] = PAD_ID
    tgt_in[3, 2:] = PAD_ID
    return src, lengths, tgt_in


@pytest.fixture
def kernel_calls(monkeypatch):
    """Counts the calls in which the kernel (not torch) produced scores, from the loop and from
    additive_scores."""
    import attnkit.accel.loops.forward as loop

    calls = {"loop": 0, "scores": 0}

    def spy(counter, real):
        def wrapped(*args, **kwargs):
            out = real(*args, **kwargs)
            calls[counter] += out is not None
            return out

        return wrapped

    monkeypatch.setattr(loop, "run_additive_energies", spy("loop", loop.run_additive_energies))
    monkeypatch.setattr(
        native, "run_additive_energies", spy("scores", native.run_additive_energies)
    )
    return calls


def _train_step(model, batch):
    src, lengths, tgt_in = batch
    model.train().zero_grad()
    logits, weights = model(src, lengths, tgt_in)
    real = tgt_in != PAD_ID
    (logits.logsumexp(-1) * real).sum().backward()
    return logits.detach()[real], {
        n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None
    }


@needs_kernel
@pytest.mark.parametrize("decoder,rnn", [("luong", "gru"), ("bahdanau", "lstm")])
def test_teacher_forcing_loop_with_the_kernel_equals_torch(decoder, rnn, kernel_calls):
    """The handwritten-backward loop (float32, CPU) computes its energies with the kernel; logits
    and every gradient match the loop with torch's energies."""
    model = _model(decoder, rnn)
    assert model.decoder.loop_spec() is not None
    with torch.enable_grad():
        logits_k, grads_k = _train_step(model, _batch())
        assert kernel_calls["loop"] == 6  # one per target step
        with native.disabled():
            logits_t, grads_t = _train_step(model, _batch())
        assert kernel_calls["loop"] == 6
    torch.testing.assert_close(logits_k, logits_t, atol=2e-5, rtol=1e-4)
    assert grads_k.keys() == grads_t.keys() and "decoder.attention.v" in grads_k
    for name, grad in grads_t.items():
        torch.testing.assert_close(grads_k[name], grad, atol=2e-5, rtol=1e-4, msg=name)


@needs_kernel
def test_decoding_with_the_kernel_equals_torch(kernel_calls):
    model = _model().eval()
    src, lengths, _ = _batch()
    kernel = (
        greedy_decode(model, src, lengths, 12),
        beam_search(model, src, lengths, 12, beam_size=3),
    )
    used = kernel_calls["scores"]
    assert used >= 2  # every step of both searches
    with native.disabled():
        plain = (
            greedy_decode(model, src, lengths, 12),
            beam_search(model, src, lengths, 12, beam_size=3),
        )
    assert kernel_calls["scores"] == used
    for hyps_k, hyps_t in zip(kernel, plain):
        hyps_k = [h for row in hyps_k for h in (row if isinstance(row, list) else [row])]
        hyps_t = [h for row in hyps_t for h in (row if isinstance(row, list) else [row])]
        assert [h.tokens for h in hyps_k] == [h.tokens for h in hyps_t]
        for a, b in zip(hyps_k, hyps_t):
            assert a.score == pytest.approx(b.score, abs=1e-4)
            torch.testing.assert_close(a.weights, b.weights, atol=1e-5, rtol=1e-4)


@pytest.fixture
def gru_kernel_calls(monkeypatch):
    """Counts the GRU steps that went through the kernel, forward and backward."""
    calls = {"forward": 0, "backward": 0}
    for name, key in (("run_gru_forward", "forward"), ("run_gru_backward", "backward")):
        real = getattr(native, name)

        def wrapped(*args, _real=real, _key=key):
            calls[_key] += 1
            return _real(*args)

        monkeypatch.setattr(native, name, wrapped)
    return calls


@needs_kernel
def test_training_step_runs_every_gru_step_through_the_kernel(gru_kernel_calls):
    """In a training step of the handwritten-backward loops, each encoder step (both directions in
    one call) and each decoder step runs the kernel forward and backward; with the kernels off, none
    does, and the gradients agree."""
    model = _model("luong", "gru")
    src, lengths, tgt_in = _batch()
    with torch.enable_grad():
        logits_k, grads_k = _train_step(model, (src, lengths, tgt_in))
        steps = src.size(1) + tgt_in.size(1)
        assert gru_kernel_calls == {"forward": steps, "backward": steps}
        with native.disabled():
            logits_t, grads_t = _train_step(model, (src, lengths, tgt_in))
        assert gru_kernel_calls == {"forward": steps, "backward": steps}
    torch.testing.assert_close(logits_k, logits_t, atol=2e-5, rtol=1e-4)
    for name, grad in grads_t.items():
        torch.testing.assert_close(grads_k[name], grad, atol=2e-5, rtol=1e-4, msg=name)


PLANTED_C = """
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(MARKER, "w");
    if (f) { fputs("ran", f); fclose(f); }
}
"""


def _plant(target, marker, mode):
    """Compile to ``target`` (given ``mode``) a library whose constructor writes ``marker``."""
    import subprocess

    source = target.parent / "planted.c"
    source.write_text(PLANTED_C)
    subprocess.run(
        [
            *native._compiler(),
            "-shared",
            "-fPIC",
            f'-DMARKER="{marker}"',
            str(source),
            "-o",
            str(target),
        ],
        check=True,
        capture_output=True,
    )
    source.unlink()
    os.chmod(target, mode)
    return _sha256(target)


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record(target):
    """Where the sha256 of a cached library is recorded."""
    return target.with_name(target.name + ".sha256")


def _kernel_works():
    q, k, v = _inputs(2, 1, 5, 8)
    scores = native.additive_energies(q, k, v)
    assert scores is not None
    torch.testing.assert_close(scores, _torch_energies(q, k, v), atol=2e-6, rtol=1e-5)


@pytest.fixture
def private_cache(monkeypatch, tmp_path):
    """A fresh cache directory (not yet created) and a fresh library state."""
    monkeypatch.setattr(native, "_state", {})
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNKIT_CACHE_DIR", str(cache))
    return cache


@needs_kernel
@pytest.mark.parametrize(
    "case", ["writable by others", "no record", "wrong record", "garbled record"]
)
def test_a_planted_library_is_never_loaded(private_cache, tmp_path, case):
    """A library at the cache's path is loaded only if it is this user's, only this user may write
    it, and its bytes are those recorded when it was built; else its constructor never runs and the
    kernels are built again in its place."""
    private_cache.mkdir(mode=0o700)
    target = native.library_path(native._compiler())
    marker = tmp_path / "constructor-ran"
    digest = _plant(target, marker, 0o777 if case == "writable by others" else 0o700)
    record = _record(target)
    if case != "no record":
        contents = {
            "writable by others": digest.encode(),
            "wrong record": b"0" * 64,
            "garbled record": b"\xff\xfe\x00",
        }
        record.write_bytes(contents[case])
        os.chmod(record, 0o600)
    native.library()
    assert not marker.exists()
    _kernel_works()
    assert _sha256(target) != digest and native._doubt(target) is None  # our build, recorded
    assert not os.stat(target).st_mode & 0o022 and not os.stat(record).st_mode & 0o022


@needs_kernel
def test_an_untrusted_cache_directory_is_left_alone(private_cache, tmp_path):
    """In a cache directory others may write, even a library with a matching record is not loaded:
    the kernels are built in a private temporary directory, with a warning naming the directory, and
    the directory's files are not touched."""
    private_cache.mkdir()
    os.chmod(private_cache, 0o777)
    target = native.library_path(native._compiler())
    marker = tmp_path / "constructor-ran"
    digest = _plant(target, marker, 0o700)
    _record(target).write_text(digest)
    os.chmod(_record(target), 0o600)
    before = sorted(p.name for p in private_cache.iterdir())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        native.library()
    assert not marker.exists()
    expected = f"{private_cache} is writable by group or others (mode 0777)"
    assert [w for w in caught if expected in str(w.message)]
    _kernel_works()
    assert sorted(p.name for p in private_cache.iterdir()) == before and _sha256(target) == digest


@needs_kernel
def test_a_cache_directory_of_another_user_is_refused(private_cache, monkeypatch):
    """Seen by another user (a fake uid), the cache directory is refused by its owner alone; the
    kernels still work, built privately, and the directory stays empty."""
    private_cache.mkdir(mode=0o700)
    uid = os.geteuid() + 12345
    monkeypatch.setattr(os, "geteuid", lambda: uid)
    owner = os.stat(private_cache).st_uid
    with pytest.warns(UserWarning, match=f"owned by uid {owner}, not by uid {uid}"):
        _kernel_works()
    assert list(private_cache.iterdir()) == []


@needs_kernel
def test_the_cache_is_created_private_whatever_the_umask(private_cache):
    """Under umask 000 the cache directory is still created 0700 and the library and its record are
    writable by this user only."""
    previous = os.umask(0)
    try:
        _kernel_works()
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(private_cache).st_mode) == 0o700
    target = native.library_path(native._compiler())
    assert native._doubt(target) is None
    for path in (target, _record(target)):
        assert not os.stat(path).st_mode & 0o022


def _status(mode, uid):
    return os.stat_result((mode, 0, 0, 1, uid, uid, 0, 0, 0, 0))


@pytest.mark.parametrize(
    "mode,uid,reason",
    [
        (stat.S_IFDIR | 0o700, 1000, None),
        (stat.S_IFREG | 0o755, 1000, None),
        (stat.S_IFDIR | 0o700, 65534, "owned by uid 65534, not by uid 1000"),
        (stat.S_IFREG | 0o644, 0, "owned by uid 0, not by uid 1000"),
        (stat.S_IFDIR | 0o775, 1000, "writable by group or others (mode 0775)"),
        (stat.S_IFREG | 0o602, 1000, "writable by group or others (mode 0602)"),
        (stat.S_IFDIR | 0o1777, 1000, "writable by group or others (mode 1777)"),
    ],
)
def test_distrust_checks_owner_then_mode(mode, uid, reason):
    assert native.distrust(_status(mode, uid), 1000) == reason
