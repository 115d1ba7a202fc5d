"""The backend switch: what each name resolves to per device and dtype, and what the model does with
it."""

import pytest
import torch

from attnkit.accel import backend as accel
from attnkit.accel import native
from attnkit.accel.backend import BACKENDS, resolve
from attnkit.models.seq2seq import Seq2Seq, Seq2SeqConfig


def test_auto_is_native_on_the_cpu_and_fused_on_cuda():
    cpu, cuda = resolve("auto", "cpu"), resolve("auto", "cuda")
    assert (cpu.name, cpu.handwritten_loop, cpu.requested) == ("native", True, "auto")
    assert (cuda.name, cuda.whole_target, cuda.handwritten_loop) == ("fused", True, False)


@pytest.mark.parametrize(
    "name, cell, whole, compiled",
    [
        ("reference", "nn", False, False),
        ("fused", "fused", True, False),
        ("compile", "fused", True, True),
    ],
)
def test_explicit_backends(name, cell, whole, compiled):
    for device in ("cpu", "cuda"):
        b = resolve(name, device)
        # off the CPU the steps call the RNN module: torch's fused cells there take no per-row bias
        expected_cell = cell if device == "cpu" else "nn"
        assert (b.name, b.cell, b.whole_target, b.handwritten_loop, b.compiled, b.kernels) == (
            name,
            expected_cell,
            whole,
            False,
            compiled,
            False,
        )
        assert b.describe().startswith(f"backend: {name} (")
        assert (b.note != "") == (device == "cuda" and name != "reference"), b.describe()


def test_native_falls_back_with_a_reason():
    on_gpu = resolve("native", "cuda")
    assert on_gpu.name == "fused" and "CPU only" in on_gpu.note and "\n" not in on_gpu.describe()
    assert on_gpu.cell == "nn" and on_gpu.whole_target and "nn.GRU/nn.LSTM" in on_gpu.describe()
    double = resolve("native", "cpu", torch.float64)
    assert double.handwritten_loop and not double.kernels and "float64" in double.note
    assert "float64" in double.describe("gru") and "GRU" in double.describe("gru")


def test_attnkit_native_0_is_honoured_and_named(monkeypatch):
    monkeypatch.setenv("ATTNKIT_NATIVE", "0")
    b = resolve("auto", "cpu")
    assert b.name == "native" and b.handwritten_loop and not b.kernels
    assert "ATTNKIT_NATIVE=0" in b.describe()


def test_native_with_its_kernels_says_so():
    if native.unavailable() is not None:
        pytest.skip(f"no kernels here: {native.unavailable()}")
    b = resolve("native", "cpu")
    assert b.kernels and b.note == ""
    assert b.describe("gru") == "backend: native (AVX2/FMA kernels), handwritten backward loop, GRU"


def test_unknown_name_is_refused():
    assert "auto" in BACKENDS
    with pytest.raises(ValueError, match="valid: auto, reference"):
        resolve("fast", "cpu")


def test_kernels_decline_inside_a_backend_without_them(monkeypatch):
    """With reference, fused or compile, the model's calls run with the kernels declining (or not
    asked); with native they are asked and accept."""
    calls = []
    monkeypatch.setattr(
        native, "_declining", lambda real=native._declining: calls.append(real()) or real()
    )
    cfg = Seq2SeqConfig(
        attention="bahdanau",
        embedding_dim=8,
        encoder_hidden=8,
        decoder_hidden=16,
        attention_dim=12,
        dropout=0.0,
    )
    model = Seq2Seq(cfg, 11, 11).eval()
    src = torch.tensor([[5, 6, 2]])
    for b, declining in ((accel.FUSED, True), (resolve("native", "cpu"), False)):
        model.set_backend(b)
        calls.clear()
        with torch.no_grad():
            memory, state = model.encode(src, torch.tensor([3]))
            model.decoder.step(torch.tensor([1]), state, memory)
        # without kernels the override is not even looked up, so a kernel may not be asked at all
        assert (calls or declining) and all(c == declining for c in calls), b.name


def test_set_backend_compiles_and_restores_the_step(monkeypatch):
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: compiled.append(fn) or fn)
    model = Seq2Seq(
        Seq2SeqConfig(embedding_dim=4, encoder_hidden=4, decoder_hidden=8, attention_dim=4), 9, 9
    )
    model.set_backend(accel.COMPILE)
    assert len(compiled) == 1 and "_step" in vars(model.decoder) and model.backend is accel.COMPILE
    model.set_backend(accel.REFERENCE)
    assert "_step" not in vars(model.decoder) and model.encoder.backend is accel.REFERENCE
