"""train.precision: bf16 autocast trains the seq2seq models on the CPU with float32 weights; fp32
(the default) is the step as it was; bad values and fp16 off CUDA are refused in one line."""

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.data.batching import make_batches
from attnkit.data.tasks.registry import build_splits
from attnkit.errors import ConfigError
from attnkit.families.seq2seq import trainer as trainer_module
from attnkit.families.seq2seq.adapter import Seq2SeqAdapter
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.evaluate import evaluate_translator
from attnkit.families.seq2seq.setup import starting_point, training_examples
from attnkit.families.seq2seq.trainer import Trainer
from attnkit.training import precision
from attnkit.training.guard import UpdateGuard
from attnkit.training.loss import token_loss_backward
from attnkit.training.state import read_state

CPU = torch.device("cpu")
MODELS = {
    "rnn": {"embedding_dim": 16, "encoder_hidden": 16, "decoder_hidden": 32, "attention_dim": 16},
    "transformer": {
        "arch": "transformer",
        "embedding_dim": 32,
        "encoder_layers": 1,
        "decoder_layers": 1,
        "heads": 2,
        "ff_dim": 64,
    },
}


def _cfg(arch, tmp_path, **train):
    data = {
        "name": "p",
        "output_dir": str(tmp_path / "run"),
        "data": {"task": "numbers", "languages": ["en"], "max_number": 199},
        "model": {**MODELS[arch], "dropout": 0.0},
        "train": {"batch_size": 16, "lr": 3e-3, "seed": 3, "progress": False, **train},
    }
    return experiment_from_dict(data, source="exp.yaml", user=True)


def _train(cfg, updates=20):
    """The first ``updates`` losses of the trainer's own adapter and guard, the bundle, and the
    dtype of the model's output logits as its forward computed them."""
    splits = build_splits(cfg.data)
    bundle, state, optimizer, scheduler = starting_point(
        cfg, splits, CPU, False, lambda message: None, True
    )
    model = bundle.model
    model.set_backend(resolve_backend(trainer_module._backend(cfg.train), CPU))
    examples = training_examples(bundle.sides, splits, cfg)
    scaler = precision.scaler(cfg.train.precision, CPU)
    adapter = Seq2SeqAdapter(
        cfg, bundle, model, optimizer, None, examples, None, None, CPU, None, scaler
    )
    seen = []
    last = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
    hook = last.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    batches = make_batches(examples, batch_size=16, shuffle=True, seed=0)
    guard, losses = UpdateGuard(5), []
    for i in range(updates):
        update = adapter.step(batches[i % 4], i + 1)  # four batches again and again: it learns them
        assert guard.step(optimizer, adapter.parameters(), update.loss, 1.0, i + 1, scaler) is None
        losses.append(update.loss)
    hook.remove()
    return losses, bundle, seen


@pytest.mark.parametrize("arch", ["rnn", "transformer"])
def test_bf16_trains_with_float32_weights_and_a_bfloat16_forward(arch, tmp_path):
    losses, bundle, seen = _train(_cfg(arch, tmp_path, precision="bf16"))
    assert all(math.isfinite(loss) for loss in losses)
    assert sum(losses[-4:]) < 0.85 * sum(losses[:4]), losses
    assert set(seen) == {torch.bfloat16}  # the forward ran in bfloat16
    assert {p.dtype for p in bundle.model.parameters()} == {torch.float32}
    assert {t.dtype for t in bundle.model.state_dict().values() if t.is_floating_point()} == {
        torch.float32
    }


@pytest.mark.parametrize("arch", ["rnn", "transformer"])
def test_fp32_is_the_default_and_computes_in_float32(arch, tmp_path):
    assert _cfg(arch, tmp_path).train.precision == "fp32"
    absent, _, seen = _train(_cfg(arch, tmp_path), updates=4)
    fp32, _, _ = _train(_cfg(arch, tmp_path, precision="fp32"), updates=4)
    assert absent == fp32  # bit for bit
    assert set(seen) == {torch.float32}


def test_fp32_step_is_the_plain_forward_and_backward(tmp_path):
    """The fp32 step equals the loss computed without any precision argument (the step before
    train.precision existed)."""
    cfg = _cfg("transformer", tmp_path)
    splits = build_splits(cfg.data)
    bundle, *_ = starting_point(cfg, splits, CPU, False, lambda m: None, True)
    examples = training_examples(bundle.sides, splits, cfg)
    batch = make_batches(examples, batch_size=16, shuffle=False, seed=0)[0]
    bundle.model.train()
    plain = token_loss_backward(bundle.model, batch, batch.num_target_tokens, 0.0)
    grads = [p.grad.clone() for p in bundle.model.parameters()]
    bundle.model.zero_grad()
    fp32 = token_loss_backward(
        bundle.model, batch, batch.num_target_tokens, 0.0, 1.0, precision.autocast("fp32", CPU)
    )
    assert plain == fp32
    assert all(torch.equal(a, p.grad) for a, p in zip(grads, bundle.model.parameters()))


def test_bad_precision_is_refused_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match=r"train\.precision") as info:
        _cfg("rnn", tmp_path, precision="fp8")
    assert "\n" not in str(info.value)


def test_fp16_is_refused_on_the_cpu_in_one_line():
    with pytest.raises(ConfigError, match=r"^train\.precision: fp16 needs CUDA") as info:
        precision.check("fp16", CPU)
    assert "\n" not in str(info.value)
    precision.check("bf16", CPU)
    precision.check("fp32", CPU)


def test_native_backend_with_bf16_is_refused_and_auto_trains_through_autograd(tmp_path):
    tc = _cfg("rnn", tmp_path, precision="bf16", backend="native").train
    with pytest.raises(ConfigError, match=r"train\.backend: native.*train\.precision: bf16"):
        trainer_module._backend(tc)
    assert trainer_module._backend(_cfg("rnn", tmp_path, precision="bf16").train) == "fused"
    assert trainer_module._backend(_cfg("rnn", tmp_path).train) == "auto"


def test_autocast_and_scaler_by_precision():
    assert precision.scaler("bf16", CPU) is None and precision.scaler("fp32", CPU) is None
    with precision.autocast("bf16", CPU):
        out = torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3))
    assert out.dtype == torch.bfloat16
    with precision.autocast("fp32", CPU):
        out = torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3))
    assert out.dtype == torch.float32


@pytest.mark.skipif(not torch.cuda.is_available(), reason="fp16 needs CUDA")
def test_fp16_scaler_unscales_before_the_guard_clips():
    device = torch.device("cuda")
    layer = torch.nn.Linear(4, 2).to(device)
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-3)
    scaler = precision.scaler("fp16", device)
    with precision.autocast("fp16", device):
        loss = layer(torch.ones(3, 4, device=device)).float().sum()
    scaler.scale(loss).backward()
    assert UpdateGuard(3).step(optimizer, layer.parameters(), loss, 1.0, 1, scaler) is None
    assert all(p.dtype == torch.float32 for p in layer.parameters())


def test_a_bf16_run_saves_float32_checkpoints_and_resumes(tmp_path):
    cfg = _cfg("transformer", tmp_path, precision="bf16", epochs=1, verbose=False)
    cfg.train.tensorboard = False
    lines = []
    Trainer(cfg, log_fn=lines.append, dev_scorer=evaluate_translator).train()
    files = [
        f for f in (cfg.run_dir / "last").glob("*.safetensors") if f.name != "trainer.safetensors"
    ]
    weights = {k: v for f in files for k, v in load_file(str(f)).items()}
    assert weights and {t.dtype for t in weights.values() if t.is_floating_point()} == {
        torch.float32
    }
    assert "scaler" not in json.loads((cfg.run_dir / "last" / "trainer.json").read_text())
    cfg.train.epochs = 2
    Trainer(cfg, log_fn=lines.append, dev_scorer=evaluate_translator).train(resume=True)
    said = [line for line in lines if line.startswith("precision: bf16 (autocast")]
    assert len(said) == 2, lines  # once a run, resumed or not
    assert read_state(cfg.run_dir / "last").epoch == 2


def test_a_float16_overflow_lowers_the_scale_and_is_not_a_bad_update():
    layer = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0)  # as CUDA's, on the CPU for the test
    before = [p.detach().clone() for p in layer.parameters()]
    scaler.scale(layer(torch.full((1, 2), float("inf"))).sum()).backward()
    guard = UpdateGuard(1)  # one bad update in a row would end the run
    reason = guard.step(optimizer, layer.parameters(), 1.0, 1.0, 1, scaler)
    assert reason and "overflowed" in reason and guard.in_a_row == 0
    assert scaler.get_scale() == 2.0
    assert all(torch.equal(a, p) for a, p in zip(before, layer.parameters()))
    scaler.scale(layer(torch.ones(1, 2)).sum()).backward()
    assert guard.step(optimizer, layer.parameters(), 1.0, 1.0, 2, scaler) is None
    assert not all(torch.equal(a, p) for a, p in zip(before, layer.parameters()))
