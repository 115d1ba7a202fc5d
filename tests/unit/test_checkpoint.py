"""Checkpoint directories: save/load round trip, every broken directory is a CheckpointError, atomic
writes."""

import errno
import json
import os
import shutil

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from attnkit import checkpoint as ckpt
from attnkit.data.batching import collate, encode_pairs
from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import PAD_ID, Vocab
from attnkit.errors import AttnkitError, CheckpointError
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.translator import Translator
from attnkit.models.seq2seq import Seq2Seq
from attnkit.training import resume

PAIRS = [
    ("abc", "cba"),
    ("hello", "olleh"),
    ("ab", "ba"),
    ("cab", "bac"),
    ("lo", "ol"),
    ("he", "eh"),
]
INPUTS = ["abc", "hello", "bca", "l"]


def _tiny_translator(attention="bahdanau", steps=2, seed=0) -> Translator:
    """A tiny char model trained for ``steps`` Adam updates on PAIRS."""
    cfg = experiment_from_dict(
        {
            "model": {
                "attention": attention,
                "embedding_dim": 8,
                "encoder_hidden": 8,
                "decoder_hidden": 16,
                "attention_dim": 8,
                "heads": 2,
                "dropout": 0.0,
            },
            "decode": {"max_len_cap": 12},
        }
    )
    tok = CharTokenizer()
    src_vocab = Vocab.build(tok.tokenize(s) for s, _ in PAIRS)
    tgt_vocab = Vocab.build(tok.tokenize(t) for _, t in PAIRS)
    torch.manual_seed(seed)
    model = Seq2Seq(cfg.model, len(src_vocab), len(tgt_vocab))
    batch = collate(encode_pairs(PAIRS, tok, tok, src_vocab, tgt_vocab))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
        loss = F.cross_entropy(
            logits.reshape(-1, logits.size(-1)), batch.tgt_out.reshape(-1), ignore_index=PAD_ID
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return Translator(model, cfg, tok, tok, src_vocab, tgt_vocab, torch.device("cpu"))


@pytest.fixture(scope="module")
def translator():
    return _tiny_translator()


@pytest.fixture
def saved(translator, tmp_path):
    return translator.save(tmp_path / "ckpt", {"state": {"step": 2}}, {"x": torch.arange(3.0)})


def _same_translations(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (
            x.output == y.output
            and x.output_tokens == y.output_tokens
            and x.source_tokens == y.source_tokens
        )
        assert x.score == y.score
        np.testing.assert_array_equal(x.weights, y.weights)
        assert [n.output for n in x.nbest] == [n.output for n in y.nbest]


def test_save_load_round_trip(translator, saved):
    loaded = Translator.load(saved, "cpu")
    for name, tensor in translator.model.state_dict().items():
        assert torch.equal(tensor, loaded.model.state_dict()[name]), name
    assert loaded.config == translator.config
    assert (
        loaded.src_vocab.itos == translator.src_vocab.itos
        and loaded.tgt_vocab.itos == translator.tgt_vocab.itos
    )
    assert not loaded.model.training
    _same_translations(translator.translate(INPUTS), loaded.translate(INPUTS))
    _same_translations(
        translator.translate(INPUTS, beam_size=3, n_best=2),
        loaded.translate(INPUTS, beam_size=3, n_best=2),
    )


@pytest.mark.parametrize("attention", ["luong-general", "multihead"])
def test_round_trip_other_attention(tmp_path, attention):
    t = _tiny_translator(attention)
    loaded = Translator.load(t.save(tmp_path / "c"), "cpu")
    _same_translations(t.translate(INPUTS, beam_size=2), loaded.translate(INPUTS, beam_size=2))


def test_directory_contents(saved):
    names = {p.name for p in saved.iterdir()}
    assert {
        "model.safetensors",
        "config.yaml",
        "meta.json",
        "trainer.json",
        "trainer.safetensors",
        "src_vocab.json",
        "tgt_vocab.json",
        "tokenizers.json",
    } <= names
    meta = json.loads((saved / "meta.json").read_text())
    assert meta == {"format": "attnkit-checkpoint", "version": 1, "family": "seq2seq"}
    assert yaml.safe_load((saved / "config.yaml").read_text())["model"]["decoder_hidden"] == 16
    assert json.loads((saved / "trainer.json").read_text()) == {"state": {"step": 2}}
    assert torch.equal(load_file(str(saved / "trainer.safetensors"))["x"], torch.arange(3.0))
    assert json.loads((saved / "tokenizers.json").read_text())["source"]["kind"] == "char"
    # no temp or backup directories left next to it
    assert [p.name for p in saved.parent.iterdir()] == ["ckpt"]


def _load_error(directory) -> str:
    with pytest.raises(CheckpointError) as err:
        Translator.load(directory, "cpu")
    assert isinstance(err.value, AttnkitError)
    return str(err.value)


def test_missing_directory(tmp_path):
    assert str(tmp_path / "nope") in _load_error(tmp_path / "nope")


def test_missing_meta(saved):
    (saved / "meta.json").unlink()
    msg = _load_error(saved)
    assert "meta.json" in msg and str(saved) in msg


@pytest.mark.parametrize(
    "name",
    ["model.safetensors", "config.yaml", "src_vocab.json", "tgt_vocab.json", "tokenizers.json"],
)
def test_missing_file(saved, name):
    (saved / name).unlink()
    assert str(saved / name) in _load_error(saved)


@pytest.mark.parametrize(
    "data",
    [b"garbage bytes \x00\xff" * 10, b"", b'\x10\x00\x00\x00\x00\x00\x00\x00{"a": 1}'],
    ids=["garbage", "empty", "bad-header"],
)
def test_corrupt_model_safetensors(saved, data):
    (saved / "model.safetensors").write_bytes(data)
    msg = _load_error(saved)
    assert str(saved / "model.safetensors") in msg and "corrupt" in msg


def test_truncated_model_safetensors(saved):
    path = saved / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert str(path) in _load_error(saved)


@pytest.mark.parametrize(
    "meta, what",
    [
        ({"format": "joeynmt", "version": 1, "family": "seq2seq"}, "joeynmt"),
        ({"format": "attnkit-checkpoint", "version": 99, "family": "seq2seq"}, "99"),
        ({"format": "attnkit-checkpoint", "version": 1, "family": "vision"}, "vision"),
        (["not", "a", "dict"], "not an attnkit checkpoint"),
    ],
)
def test_foreign_meta(saved, meta, what):
    (saved / "meta.json").write_text(json.dumps(meta))
    msg = _load_error(saved)
    assert what in msg and str(saved) in msg


@pytest.mark.parametrize("family", [None, 3])
def test_meta_without_a_family_names_file_and_key(saved, family):
    meta = {"format": "attnkit-checkpoint", "version": 1}
    if family is not None:
        meta["family"] = family
    (saved / "meta.json").write_text(json.dumps(meta))
    for read in (lambda: ckpt.read_meta(saved), lambda: Translator.load(saved, "cpu")):
        with pytest.raises(CheckpointError) as err:  # it was a KeyError in the CLI
            read()
        assert str(saved / "meta.json") in str(err.value) and "'family'" in str(err.value)


def test_unreadable_meta(saved):
    (saved / "meta.json").write_text("{not json")
    assert "meta.json" in _load_error(saved)


def test_parameter_shape_mismatch(saved):
    cfg = yaml.safe_load((saved / "config.yaml").read_text())
    cfg["model"]["decoder_hidden"] = 24
    (saved / "config.yaml").write_text(yaml.safe_dump(cfg))
    msg = _load_error(saved)
    assert str(saved / "model.safetensors") in msg and "shape" in msg


def test_parameter_names_mismatch(saved):
    cfg = yaml.safe_load((saved / "config.yaml").read_text())
    cfg["model"]["attention"] = "luong-dot"  # no parameters: attention.* are unexpected
    cfg["model"]["decoder"] = "bahdanau"
    (saved / "config.yaml").write_text(yaml.safe_dump(cfg))
    msg = _load_error(saved)
    assert str(saved / "model.safetensors") in msg and ("missing" in msg or "unexpected" in msg)


def test_bad_config_in_checkpoint_is_checkpoint_error(saved):
    cfg = yaml.safe_load((saved / "config.yaml").read_text())
    cfg["model"]["colour"] = "blue"
    (saved / "config.yaml").write_text(yaml.safe_dump(cfg))
    msg = _load_error(saved)
    assert "config.yaml" in msg and "colour" in msg


def test_bad_vocab_is_checkpoint_error(saved):
    (saved / "src_vocab.json").write_text(json.dumps({"tokens": ["a", "b"]}))
    assert "src_vocab.json" in _load_error(saved)


def test_failed_write_keeps_previous_checkpoint(translator, saved, monkeypatch):
    before = {p.name: p.read_bytes() for p in saved.iterdir()}

    def boom(self, path):
        raise OSError("disk full")

    monkeypatch.setattr(Vocab, "save", boom)  # raises inside write_checkpoint's extra callback
    with pytest.raises(CheckpointError) as err:
        translator.save(saved, {"state": {"step": 99}})
    assert str(err.value) == (
        f"{saved}: could not save the checkpoint: disk full (the previous one is kept)"
    )
    after = {p.name: p.read_bytes() for p in saved.iterdir()}
    assert after == before
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]
    monkeypatch.undo()
    Translator.load(saved, "cpu")


def test_overwrite_replaces_and_cleans_up(translator, saved):
    translator.save(saved, {"state": {"step": 7}})
    assert json.loads((saved / "trainer.json").read_text()) == {"state": {"step": 7}}
    assert not (
        saved / "trainer.safetensors"
    ).exists()  # nothing stale from the previous checkpoint
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]


def test_write_checkpoint_creates_parents(tmp_path):
    out = ckpt.write_checkpoint(tmp_path / "a" / "b" / "c", "toy", {"w": torch.ones(2)}, {"k": 1})
    assert ckpt.read_meta(out, "toy")["family"] == "toy"
    assert torch.equal(ckpt.read_tensors(out / "model.safetensors")["w"], torch.ones(2))
    assert ckpt.read_config(out) == {"k": 1}
    assert ckpt.read_tensors(out / "trainer.safetensors", required=False) is None
    assert ckpt.read_json(out / "nope.json", required=False) is None


def _adam_and_steps(steps, seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.95), weight_decay=0.01)
    x = torch.randn(16, 4)
    for _ in range(steps):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    return model, opt, x


def test_optimizer_round_trip_for_adam(tmp_path):
    model, opt, x = _adam_and_steps(3)
    info, tensors = resume.optimizer_to_tensors(opt)
    # through the same files a checkpoint uses: JSON and safetensors
    (tmp_path / "opt.json").write_text(json.dumps(info))
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp_path / "opt.safetensors"))
    info2 = json.loads((tmp_path / "opt.json").read_text())
    tensors2 = load_file(str(tmp_path / "opt.safetensors"))

    model2, opt2, _ = _adam_and_steps(0)
    model2.load_state_dict(model.state_dict())
    resume.restore_optimizer(opt2, info2, tensors2)
    s1, s2 = opt.state_dict(), opt2.state_dict()
    assert json.loads(json.dumps(s1["param_groups"])) == json.loads(json.dumps(s2["param_groups"]))
    assert s1["state"].keys() == s2["state"].keys()
    for pid in s1["state"]:
        for name, value in s1["state"][pid].items():
            other = s2["state"][pid][name]
            if torch.is_tensor(value):
                assert torch.equal(value, other), (pid, name)
            else:
                assert value == other
    # the next update is identical
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    for p1, p2 in zip(model.parameters(), model2.parameters()):
        assert torch.equal(p1, p2)


def test_optimizer_state_for_another_model_is_checkpoint_error():
    _, opt, _ = _adam_and_steps(1)
    info, tensors = resume.optimizer_to_tensors(opt)
    other = torch.optim.Adam(torch.nn.Linear(3, 3).parameters())
    with pytest.raises(CheckpointError, match="optimizer"):
        resume.restore_optimizer(other, info, tensors)


def _step(directory) -> int:
    return json.loads((directory / "trainer.json").read_text())["state"]["step"]


@pytest.fixture(params=["exchange", "fallback"])
def swap_mode(request, monkeypatch):
    """Replacement by an atomic swap (this OS), or by the two renames used where there is none."""
    if request.param == "exchange":
        if not ckpt._exchange_available():
            pytest.skip("this OS or file system cannot swap two paths atomically")
    else:
        monkeypatch.setattr(ckpt, "_exchange", lambda a, b: False)
    return request.param


def test_failed_swap_keeps_previous_checkpoint(translator, saved, swap_mode, monkeypatch):
    before = {p.name: p.read_bytes() for p in saved.iterdir()}
    real_replace = os.replace

    def replace(src, dst):
        if ".tmp-" in os.path.basename(str(src)):
            raise OSError(errno.EXDEV, "rename failed")  # moving the new temp directory into place
        return real_replace(src, dst)

    def exchange(a, b):
        raise OSError(errno.EIO, "swap failed")

    monkeypatch.setattr(ckpt.os, "replace", replace)
    if swap_mode == "exchange":
        monkeypatch.setattr(ckpt, "_exchange", exchange)
    with pytest.raises(CheckpointError, match="could not save the checkpoint: (rename|swap) fail"):
        translator.save(saved, {"state": {"step": 99}})
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in saved.iterdir()} == before
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]


class _Killed(BaseException):
    """A stand-in for SIGKILL: no except or finally block may clean up after it."""


def test_a_kill_at_any_point_of_a_replacement_leaves_a_complete_checkpoint(
    translator, tmp_path, swap_mode, monkeypatch
):
    """Kill the save of a new checkpoint over an old one at each of its file-system steps: the
    checkpoint loads (at once where the OS swaps atomically; after the trainer's recovery elsewhere)
    and is the old or the new one, with no temporaries left."""
    outcomes = []
    for kill_at in range(1, 20):
        parent = tmp_path / f"k{kill_at}"
        target = translator.save(parent / "last", {"state": {"step": 1}})
        calls = []

        def step(real):
            def wrapper(*args, **kwargs):
                calls.append(real)  # noqa: B023 - used within this iteration only
                if len(calls) >= kill_at:  # noqa: B023 - this step and every later one never happen
                    raise _Killed
                return real(*args, **kwargs)

            return wrapper

        with monkeypatch.context() as patch:
            patch.setattr(ckpt.os, "replace", step(os.replace))
            patch.setattr(ckpt.shutil, "rmtree", step(shutil.rmtree))
            patch.setattr(ckpt, "_exchange", step(ckpt._exchange))
            try:
                translator.save(target, {"state": {"step": 2}}, {"x": torch.ones(2)})
                killed = False
            except _Killed:
                killed = True
        if swap_mode == "exchange":  # never a moment without a complete checkpoint
            assert _step(target) in (1, 2)
            Translator.load(target, "cpu")
        ckpt.recover_interrupted(parent, "last")
        assert [p.name for p in parent.iterdir()] == ["last"]
        assert _step(target) in (1, 2)
        Translator.load(target, "cpu")
        outcomes.append(_step(target))
        if not killed:
            break
    assert outcomes[0] == 1 and outcomes[-1] == 2 and len(outcomes) >= 3


def test_recovery_restores_a_checkpoint_moved_aside_and_removes_temporaries(translator, tmp_path):
    old = translator.save(tmp_path / ".last.old-123-456", {"state": {"step": 1}})
    new = translator.save(tmp_path / ".last.tmp-abc", {"state": {"step": 2}})
    (tmp_path / ".best.tmp-half").mkdir()  # killed while writing: no meta.json
    translator.save(tmp_path / "best", {"state": {"step": 1}})
    translator.save(tmp_path / ".best.k2j3h4g5", {"state": {"step": 0}})  # an earlier version's
    (tmp_path / ".keep.tmp-x").mkdir()  # not a checkpoint name asked for: left alone
    messages = ckpt.recover_interrupted(tmp_path, "last|best")
    assert messages == [
        f"{tmp_path / 'last'}: restored from {new.name}, left by an interrupted save"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".keep.tmp-x", "best", "last"]
    assert _step(tmp_path / "last") == 2 and _step(tmp_path / "best") == 1
    assert not old.exists()
    assert ckpt.recover_interrupted(tmp_path / "missing", "last") == []


def test_recovery_falls_back_to_the_old_checkpoint(translator, tmp_path):
    translator.save(tmp_path / ".last.old-1-2", {"state": {"step": 1}})
    (tmp_path / ".last.tmp-new").mkdir()  # the new one never completed
    assert len(ckpt.recover_interrupted(tmp_path, "last")) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["last"] and _step(tmp_path / "last") == 1


def test_safetensors_write_error_is_a_checkpoint_error(translator, saved, monkeypatch):
    def full(*args, **kwargs):
        raise SafetensorError(
            "Error while serializing: IoError(No space left on device (os error 28))"
        )

    monkeypatch.setattr(ckpt, "save_file", full)
    with pytest.raises(CheckpointError, match="No space left on device") as err:
        translator.save(saved, {"state": {"step": 99}})
    assert str(saved) in str(err.value) and "\n" not in str(err.value)
    monkeypatch.undo()
    assert _step(saved) == 2
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]


def test_unwritable_parent_is_a_checkpoint_error(translator, tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(ckpt.os, "mkdir", denied)
    with pytest.raises(CheckpointError, match="could not save the checkpoint: Permission denied"):
        translator.save(tmp_path / "ckpt")


# ---- checkpoint averaging ------------------------------------------------------------------------
def test_average_of_two_known_state_dicts():
    a = {
        "w": torch.tensor([[1.0, 2.0], [3.0, 4.0]]),
        "b": torch.tensor([0.0, -2.0]),
        "n": torch.tensor(3),
    }
    b = {
        "w": torch.tensor([[3.0, 2.0], [1.0, 0.0]]),
        "b": torch.tensor([1.0, 2.0]),
        "n": torch.tensor(5),
    }
    out = ckpt.average_tensors([a, b])
    assert torch.equal(out["w"], torch.tensor([[2.0, 2.0], [2.0, 2.0]]))
    assert torch.equal(out["b"], torch.tensor([0.5, 0.0]))
    assert out["w"].dtype == torch.float32
    assert out["n"].item() == 5  # integer buffers are not averaged: the last one is kept
    assert torch.equal(ckpt.average_tensors([a])["w"], a["w"])


def test_average_needs_matching_checkpoints():
    with pytest.raises(CheckpointError, match="other parameter names"):
        ckpt.average_tensors([{"w": torch.ones(2)}, {"v": torch.ones(2)}])
    with pytest.raises(CheckpointError, match="w: shapes differ"):
        ckpt.average_tensors([{"w": torch.ones(2)}, {"w": torch.ones(3)}])
    with pytest.raises(ValueError):
        ckpt.average_tensors([])


def test_averaged_directory_loads_and_translates(tmp_path):
    one, two = _tiny_translator(steps=1, seed=0), _tiny_translator(steps=3, seed=1)
    states = [
        ckpt.read_tensors(t.save(tmp_path / name) / "model.safetensors")
        for t, name in ((one, "a"), (two, "b"))
    ]
    one.model.load_state_dict(ckpt.average_tensors(states))
    one.save(tmp_path / "averaged", {"averaged_steps": [1, 3]})
    loaded = Translator.load(tmp_path / "averaged", "cpu")
    for name, tensor in loaded.model.state_dict().items():
        torch.testing.assert_close(tensor, (states[0][name] + states[1][name]) / 2, msg=name)
    outputs = loaded.translate(INPUTS, beam_size=2)
    assert len(outputs) == len(INPUTS) and all(isinstance(t.output, str) for t in outputs)


# ---- what loading and writing refuse ------------------------------------------------------------
def _rewrite_weight(saved, change):
    """Apply ``change(state)`` to the weights in ``saved/model.safetensors``."""
    state = load_file(str(saved / "model.safetensors"))
    change(state)
    save_file(state, str(saved / "model.safetensors"))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weights_are_refused_on_load(saved, value):
    _rewrite_weight(saved, lambda s: s["decoder.output.weight"].view(-1)[3].fill_(value))
    msg = _load_error(saved)
    assert str(saved / "model.safetensors") in msg
    assert "decoder.output.weight holds NaN or infinite values" in msg


@pytest.mark.parametrize("dtype", [torch.int64, torch.float64, torch.float16])
def test_weights_of_another_dtype_are_refused_on_load(saved, dtype):
    name = "encoder.embed.weight"
    _rewrite_weight(saved, lambda s: s.update({name: s[name].to(dtype)}))
    msg = _load_error(saved)
    assert name in msg and str(dtype).removeprefix("torch.") in msg and "float32" in msg


# ---- float32 weights stored as float16 (the model zoo's) ---------------------------------------
#: how far a float16-stored model's scores may fall from its float32 source's: the sum of its
#: log-probabilities per output (float16 keeps ~3 significant digits of each weight)
HALF_SCORE_TOLERANCE = 0.05


def test_a_float16_checkpoint_loads_as_float32_and_scores_like_its_source(tmp_path):
    from attnkit.checkpoint.half import stored_as_half, write_half

    source = _tiny_translator(steps=120)
    directory = source.save(tmp_path / "half", {"state": {"step": 120}})
    before = (directory / "model.safetensors").stat().st_size
    write_half(directory)
    assert stored_as_half(directory / "model.safetensors")
    assert (directory / "model.safetensors").stat().st_size < 0.6 * before
    assert {t.dtype for t in load_file(str(directory / "model.safetensors")).values()} == {
        torch.float16
    }
    loaded = Translator.load(directory, "cpu")
    for name, tensor in loaded.model.state_dict().items():
        assert tensor.dtype == torch.float32, name
        torch.testing.assert_close(tensor, source.model.state_dict()[name], rtol=1e-3, atol=1e-4)
    inputs = [s for s, _ in PAIRS]
    want, got = source.translate(inputs), loaded.translate(inputs)
    assert [t.output for t in got] == [t.output for t in want]
    assert sum(t.output == gold for t, (_, gold) in zip(got, PAIRS)) >= 4  # it learnt the pairs
    for a, b in zip(got, want):
        assert a.score == pytest.approx(b.score, abs=HALF_SCORE_TOLERANCE)
        np.testing.assert_allclose(a.weights, b.weights, atol=1e-2)


def test_float16_weights_are_refused_unless_the_file_says_they_are_stored_half(saved):
    from attnkit.checkpoint.half import write_half

    write_half(saved)
    state = load_file(str(saved / "model.safetensors"))
    save_file(state, str(saved / "model.safetensors"))  # the same tensors, no stored_as mark
    assert "has dtype float16, the model expects float32" in _load_error(saved)


def test_a_weight_float16_cannot_hold_is_not_stored_half(saved):
    from attnkit.checkpoint.half import write_half

    _rewrite_weight(saved, lambda s: s["decoder.output.bias"].view(-1)[0].fill_(1e6))
    before = (saved / "model.safetensors").read_bytes()
    with pytest.raises(CheckpointError, match="not stored as float16: decoder.output.bias holds"):
        write_half(saved)
    assert (saved / "model.safetensors").read_bytes() == before
    assert sorted(p.name for p in saved.iterdir() if p.name.startswith(".")) == []


def test_non_finite_weights_are_never_written(translator, saved):
    before = {p.name: p.read_bytes() for p in saved.iterdir()}
    with torch.no_grad():
        translator.model.decoder.output.bias[0] = float("nan")
    try:
        with pytest.raises(CheckpointError, match=r"not written: decoder.output.bias holds NaN"):
            translator.save(saved, {"state": {"step": 9}})
    finally:
        with torch.no_grad():
            translator.model.decoder.output.bias[0] = 0.0
    assert {p.name: p.read_bytes() for p in saved.iterdir()} == before  # the previous one stays
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]


# too short; broadcasts over (8, 4)
@pytest.mark.parametrize("bad", [torch.zeros(2), torch.zeros(8)])
def test_optimizer_moments_of_another_shape_are_refused(bad):
    _, opt, _ = _adam_and_steps(2)
    info, tensors = resume.optimizer_to_tensors(opt)
    tensors = {k: v.clone() for k, v in tensors.items()}
    tensors["optimizer.0.exp_avg"] = bad
    model2, _, _ = _adam_and_steps(0)
    fused = torch.optim.Adam(model2.parameters(), lr=0.01, fused=True)
    match = r"trainer.safetensors: optimizer.0.exp_avg is float32"
    with pytest.raises(CheckpointError, match=match):
        resume.restore_optimizer(fused, info, tensors)
    assert not fused.state


@pytest.fixture
def umask():
    """Set the process's umask for one test (``umask(0o027)``); the old one is put back after."""
    previous = os.umask(0o022)
    try:
        yield os.umask
    finally:
        os.umask(previous)


def _modes(directory) -> dict[str, int]:
    """Path under ``directory`` ('.' for itself) -> permission bits."""
    found = {".": directory.stat().st_mode & 0o7777}
    for path in directory.rglob("*"):
        found[str(path.relative_to(directory))] = path.stat().st_mode & 0o7777
    return found


@pytest.mark.parametrize(
    "mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)]
)
def test_checkpoints_follow_the_umask_when_written_and_replaced(
    translator, tmp_path, umask, swap_mode, mask, file_mode, dir_mode
):
    """Files and directories of a checkpoint get the modes of any other new file, not mkdtemp's
    0700 or safetensors' 0600 (a teammate can read a shared run); a replacement too."""
    umask(mask)
    tensors = {"x": torch.arange(3.0)}
    for step in (1, 2):  # written afresh, then swapped in over the first
        saved = translator.save(tmp_path / "ckpt", {"state": {"step": step}}, tensors)
        modes = _modes(saved)
        assert {"model.safetensors", "trainer.safetensors", "meta.json"} <= set(modes)
        assert modes.pop(".") == dir_mode
        assert modes == dict.fromkeys(modes, file_mode), modes
        assert _step(saved) == step
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]  # no temporary left


def test_temporaries_follow_the_umask(tmp_path, umask):
    umask(0o002)
    directory = ckpt.make_temp_dir(tmp_path, ".x.tmp-")
    fd, path = ckpt.open_temp_file(tmp_path, ".y.", ".tmp")
    os.close(fd)
    assert directory.name.startswith(".x.tmp-") and path.name.endswith(".tmp")
    assert directory.stat().st_mode & 0o777 == 0o775 and path.stat().st_mode & 0o777 == 0o664
    assert ckpt.make_temp_dir(tmp_path, ".x.tmp-") != directory  # a new name each time


@pytest.mark.parametrize("name", ["model.safetensors", "config.yaml", "trainer.json"])
def test_a_fifo_in_place_of_a_checkpoint_file_is_refused_not_waited_on(tmp_path, name):
    import os
    import time

    from torch import nn

    from attnkit.checkpoint.validate import build_checked, read_header

    model = nn.Linear(2, 2)
    ckpt.write_checkpoint(tmp_path, "seq2seq", model.state_dict(), {"model": {}}, {"step": 1})
    (tmp_path / name).unlink()
    os.mkfifo(tmp_path / name)  # no writer: an open() would wait for ever
    start = time.monotonic()
    with pytest.raises(CheckpointError) as caught:
        if name == "model.safetensors":
            build_checked(tmp_path, lambda: nn.Linear(2, 2))
        elif name == "config.yaml":
            ckpt.read_config(tmp_path)
        else:
            ckpt.read_json(tmp_path / name)
    assert time.monotonic() - start < 5
    assert (
        str(caught.value)
        == f"{tmp_path / name}: is a FIFO, device or socket, not a regular file (not read)"
    )
    if name == "model.safetensors":
        with pytest.raises(CheckpointError, match="not a regular file"):
            read_header(tmp_path / name)
        with pytest.raises(CheckpointError, match="not a regular file"):
            ckpt.read_tensors(tmp_path / name)
