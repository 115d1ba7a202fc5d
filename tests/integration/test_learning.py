"""End to end: a tiny model learns a tiny task; the demo runs; --resume continues where training
stopped."""

import json
import random
from pathlib import Path

import pytest
import torch
import yaml

from attnkit.cli import main
from attnkit.errors import ConfigError
from attnkit.families.seq2seq.config import load_experiment
from attnkit.families.seq2seq.evaluate import evaluate_translator
from attnkit.families.seq2seq.trainer import Trainer
from attnkit.families.seq2seq.translator import Translator
from attnkit.training.loop import TrainingLoop
from attnkit.viz import load_records

pytestmark = pytest.mark.slow

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _reversal_data(tmp, n_train, n_dev=100, n_test=50, seed=0):
    """Digit strings of length 2-6 and their reversals, as train/dev/test TSVs with disjoint
    sources."""
    rng, seen, paths = random.Random(seed), set(), {}
    for name, n in (("train", n_train), ("dev", n_dev), ("test", n_test)):
        lines = []
        while len(lines) < n:
            s = "".join(rng.choice("0123456789") for _ in range(rng.randint(2, 6)))
            if s not in seen:
                seen.add(s)
                lines.append(f"{s}\t{s[::-1]}\n")
        paths[name] = tmp / f"{name}.tsv"
        paths[name].write_text("".join(lines), encoding="utf-8")
    return {"task": "parallel", **{k: str(v) for k, v in paths.items()}}


def _write_config(path, data, run_dir, model, train):
    cfg = {
        "name": "test",
        "output_dir": str(run_dir),
        "data": data,
        "model": model,
        "train": {"threads": 1, "progress": False, "seed": 1, **train},
        "decode": {"beam_size": 3},
    }
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _state(run_dir, name="last"):
    return json.loads((run_dir / name / "trainer.json").read_text())["state"]


def test_tiny_model_learns_to_reverse_digit_strings(tmp_path, capsys):
    data = _reversal_data(tmp_path, 1500)
    cfg = _write_config(
        tmp_path / "reverse.yaml",
        data,
        tmp_path / "run",
        {
            "attention": "bahdanau",
            "embedding_dim": 16,
            "encoder_hidden": 32,
            "decoder_hidden": 64,
            "attention_dim": 32,
            "dropout": 0.0,
        },
        {"epochs": 6, "batch_size": 32, "lr": 0.005, "scheduler": "constant"},
    )
    assert main(["train", str(cfg)]) == 0
    assert "best checkpoint" in capsys.readouterr().out
    translator = Translator.load(tmp_path / "run" / "best", "cpu")
    pairs = [line.split("\t") for line in (tmp_path / "dev.tsv").read_text().splitlines()]
    outputs = translator.translate([s for s, _ in pairs])
    exact = sum(t.output == ref for t, (_, ref) in zip(outputs, pairs)) / len(pairs)
    assert exact >= 0.90, f"dev exact match {exact:.2%}"
    assert _state(tmp_path / "run", "best")["best"] >= 90.0
    # held-out test inputs with beam search too
    pairs = [line.split("\t") for line in (tmp_path / "test.tsv").read_text().splitlines()]
    outputs = translator.translate([s for s, _ in pairs], beam_size=3)
    assert sum(t.output == ref for t, (_, ref) in zip(outputs, pairs)) / len(pairs) >= 0.85
    # a model that reverses looks at the mirrored source position: the attention is anti-diagonal
    (t,) = translator.translate(["123456"])
    if t.output == "654321":
        looked_at = t.weights[:6, :6].argmax(-1).tolist()
        # within one position of the mirror at every step, and moving right to left (float rounding
        # alone moves a peak by one position between otherwise equal runs)
        assert all(abs(a - (5 - i)) <= 1 for i, a in enumerate(looked_at)), looked_at
        assert all(b <= a for a, b in zip(looked_at, looked_at[1:])), looked_at


def test_a_model_without_attention_learns_to_reverse_digit_strings(tmp_path):
    """The encoder-decoder without attention (one fixed vector) learns a short task. Held-out
    exact match after 15 epochs, seeds 1-4: 80-86% with torch's AVX-512 kernels, 76-90% with
    ATEN_CPU_CAPABILITY=avx2; the bound leaves a margin of 16 points below the worst."""
    data = _reversal_data(tmp_path, 1500)
    model = {
        "attention": "none",
        "embedding_dim": 16,
        "encoder_hidden": 32,
        "decoder_hidden": 64,
        "dropout": 0.0,
    }
    train = {"epochs": 15, "batch_size": 32, "lr": 0.005, "scheduler": "constant"}
    cfg = _write_config(tmp_path / "reverse.yaml", data, tmp_path / "run", model, train)
    assert main(["train", str(cfg)]) == 0
    translator = Translator.load(tmp_path / "run" / "best", "cpu")
    assert not translator.model.has_attention
    pairs = [line.split("\t") for line in (tmp_path / "test.tsv").read_text().splitlines()]
    outputs = translator.translate([s for s, _ in pairs])
    exact = sum(t.output == ref for t, (_, ref) in zip(outputs, pairs)) / len(pairs)
    assert exact >= 0.60, f"held-out exact match {exact:.2%}"


def test_demo_quick(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out), "--no-progress", "--minutes", "0.1"]) == 0
    printed = capsys.readouterr().out
    assert "test exact match" in printed
    # a smoke test says so where it starts, beside its score and in its report
    assert printed.splitlines()[1].startswith("quick mode: a smoke test")
    score = next(line for line in printed.splitlines() if "test exact match" in line)
    assert score.endswith("; quick mode: a smoke test)")
    assert "Quick mode: a smoke test" in (out / "report.html").read_text()
    pngs = sorted((out / "heatmaps").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == PNG_MAGIC for p in pngs)
    records = load_records(out / "attention.json")
    assert records and all(
        r.weights.shape == (len(r.output_tokens), len(r.source_tokens)) for r in records
    )
    # the showcase, then the test examples the report lists: every error (up to 100) first
    tested = [r for r in records if r.reference is not None]
    assert [r.right for r in tested] == sorted(r.right for r in tested)  # False first
    errors = [r.index for r in tested if not r.right]
    assert errors == sorted(errors) and all(r.correct == r.right for r in tested)
    test = json.loads((out / "metrics.json").read_text())["test"]
    wrong = round(test["items"] * (1 - test["exact_match"] / 100))
    assert len(errors) == min(wrong, 100)
    page = (out / "report.html").read_text()
    assert f'<span class="tally">{wrong:,} wrong of {test["items"]:,}' in page
    assert json.loads((out / "metrics.json").read_text())["updates"] >= 1
    assert (out / "model" / "best" / "model.safetensors").is_file()


def test_a_demo_stopped_by_its_safety_cap_says_so_in_one_line_and_resumes(tmp_path, capsys):
    """The demo trains to a data budget; a wall clock that ends it first is named in one line
    with the dev score reached and the command that goes on, which continues the same run."""
    out = tmp_path / "demo"
    argv = ["demo", "--quick", "--out", str(out), "--no-progress", "--threads", "1"]
    assert main([*argv, "--minutes", "0.001"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "safety cap" in line]
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("stopped by the 0.001-minute safety cap after ")
    assert "best dev exact match " in line and "epoch 1 of 4" in line
    assert f"`attnkit demo --out {out} --quick --resume`" in line
    first = json.loads((out / "metrics.json").read_text())
    assert first["stopped_by_safety_cap"] is True
    assert "The safety cap (0.001 minutes) ended this run" in (out / "report.html").read_text()
    assert main([*argv, "--minutes", "0.001", "--resume"]) == 0
    assert json.loads((out / "metrics.json").read_text())["updates"] > first["updates"]


def test_a_busy_machine_is_said_at_the_start_and_an_idle_one_is_not():
    from attnkit.demo import busy_line

    assert busy_line(1.9, 2) is None and busy_line(2.0, 2) is None
    line = busy_line(7.25, 2)
    assert "load average 7.2 on 2 cores" in line and "`attnkit serve`" in line


def test_demo_recipe_is_a_data_budget_with_a_safety_cap():
    from attnkit.demo import SAFETY_MINUTES, demo_config

    train = demo_config(Path("runs/demo"), quick=False, attention="bahdanau", minutes=None)["train"]
    assert train["epochs"] == 60 and train["patience"] == 4
    assert train["max_minutes"] == SAFETY_MINUTES >= 10
    assert demo_config(Path("x"), False, "bahdanau", 3, threads=1)["train"]["threads"] == 1


def test_every_demo_recipe_is_a_valid_experiment():
    """What the demo hands attnkit.train passes its checks as a person's file: every key applies
    (a model without attention has no attention_dim)."""
    from attnkit.demo import demo_config
    from attnkit.families.seq2seq.config import experiment_from_dict

    for quick in (False, True):
        for attention in ("bahdanau", "none", "luong-general"):
            data = demo_config(Path("x"), quick, attention, None, threads=1)
            cfg = experiment_from_dict(data, source="demo", user=True)
            assert cfg.model.attention == attention and cfg.train.threads == 1
            assert cfg.train.epochs == (4 if quick else 60)


def test_demo_quick_without_attention_says_so_and_draws_saliency(tmp_path, capsys):
    out = tmp_path / "demo"
    argv = ["demo", "--quick", "--attention", "none", "--out", str(out), "--no-progress"]
    assert main([*argv, "--minutes", "0.1"]) == 0
    printed = capsys.readouterr().out
    assert "no attention (model.attention: none)" in printed
    assert "the model has no attention: the pictures show gradient saliency" in printed
    pngs = sorted((out / "heatmaps").glob("*.png"))
    assert len(pngs) == 5 and all(p.read_bytes()[:8] == PNG_MAGIC for p in pngs)
    assert not (out / "attention.json").exists()
    records = load_records(out / "saliency.json")
    assert records and all(abs(r.weights.sum(1) - 1).max() < 1e-4 for r in records)
    assert "This model has no attention" in (out / "report.html").read_text()


# ---- --resume ------------------------------------------------------------------------------------
TINY_MODEL = {
    "embedding_dim": 8,
    "encoder_hidden": 8,
    "decoder_hidden": 16,
    "attention_dim": 8,
    "dropout": 0.0,
}


@pytest.fixture
def small_task(tmp_path):
    return _reversal_data(tmp_path, 200, n_dev=20, n_test=10)  # batch 20: 10 updates per epoch


def test_resume_to_more_epochs_continues_the_step_count(tmp_path, small_task):
    run = tmp_path / "run"
    cfg = _write_config(
        tmp_path / "exp.yaml", small_task, run, TINY_MODEL, {"epochs": 2, "batch_size": 20}
    )
    assert main(["train", str(cfg)]) == 0
    first = _state(run)
    assert first["step"] == 20 and first["epoch"] == 2
    assert main(["train", str(cfg), "--resume", "--set", "train.epochs=3"]) == 0
    second = _state(run)
    assert second["step"] == 30  # continued: 20 + 10, not restarted at 0 and not stuck at 20
    assert second["epoch"] == 3
    assert [h["step"] for h in second["history"]] == [10, 20, 30]


@pytest.mark.parametrize("patience, evaluations", [(2, 3), (None, 6)])
def test_patience_stops_early_and_null_never_does(
    tmp_path, small_task, monkeypatch, patience, evaluations
):
    """A dev score that never improves after the first evaluation: patience 2 stops at the third,
    null runs on."""
    # the dev scorer `attnkit train` passes
    import attnkit.families.seq2seq.evaluate as evaluate_module

    original = evaluate_module.evaluate_translator

    def flat_dev_scores(*args, **kwargs):
        metrics, *rest = original(*args, **kwargs)
        return ({key: 50.0 for key in metrics}, *rest)

    monkeypatch.setattr(evaluate_module, "evaluate_translator", flat_dev_scores)
    train = {"epochs": 3, "batch_size": 20, "eval_every": 5, "patience": patience}
    cfg = _write_config(tmp_path / "exp.yaml", small_task, tmp_path / "run", TINY_MODEL, train)
    assert main(["train", str(cfg)]) == 0
    assert [h["step"] for h in _state(tmp_path / "run")["history"]] == [
        5 * (i + 1) for i in range(evaluations)
    ]


def _interrupt_after(step):
    """Patch TrainingLoop._evaluate to raise KeyboardInterrupt right after the evaluation
    (and checkpoint) at ``step``."""
    original = TrainingLoop._evaluate

    def evaluate(self, state, *args):
        result = original(self, state, *args)
        if state.step == step:
            raise KeyboardInterrupt
        return result

    return evaluate


def _params(run):
    return Translator.load(run / "last", "cpu").model.state_dict()


@pytest.mark.parametrize(
    "schedule", [{"scheduler": "plateau"}, {"scheduler": "noam", "warmup_steps": 8}]
)
def test_resume_mid_epoch_continues_exactly(tmp_path, small_task, monkeypatch, schedule):
    """Weights and learning rates of an interrupted and resumed run equal those of a straight one
    (noam's warm-up does not start again)."""
    train = {"epochs": 2, "batch_size": 20, "eval_every": 5, "patience": 100, **schedule}
    straight = _write_config(tmp_path / "a.yaml", small_task, tmp_path / "a", TINY_MODEL, train)
    assert main(["train", str(straight)]) == 0

    resumed = _write_config(tmp_path / "b.yaml", small_task, tmp_path / "b", TINY_MODEL, train)
    monkeypatch.setattr(TrainingLoop, "_evaluate", _interrupt_after(15))
    with pytest.raises(KeyboardInterrupt):
        Trainer(load_experiment(resumed), dev_scorer=evaluate_translator).train()
    monkeypatch.undo()
    stopped = _state(tmp_path / "b")
    assert stopped["step"] == 15 and stopped["batches_done"] == 5 and not stopped["finished"]

    assert main(["train", str(resumed), "--resume"]) == 0
    state = _state(tmp_path / "b")
    assert state["step"] == 20 and state["finished"]
    assert [h["step"] for h in state["history"]] == [5, 10, 15, 20]
    assert [(h["step"], h["lr"]) for h in state["history"]] == [
        (h["step"], h["lr"]) for h in _state(tmp_path / "a")["history"]
    ]
    a, b = _params(tmp_path / "a"), _params(tmp_path / "b")
    for name in a:
        torch.testing.assert_close(b[name], a[name], msg=name)


def test_resume_after_an_end_of_epoch_checkpoint_starts_the_next_epoch(
    tmp_path, small_task, monkeypatch
):
    train = {"epochs": 3, "batch_size": 20, "patience": 100}
    cfg = _write_config(tmp_path / "exp.yaml", small_task, tmp_path / "run", TINY_MODEL, train)
    monkeypatch.setattr(
        TrainingLoop, "_evaluate", _interrupt_after(20)
    )  # killed right after epoch 2's checkpoint
    with pytest.raises(KeyboardInterrupt):
        Trainer(load_experiment(cfg), dev_scorer=evaluate_translator).train()
    monkeypatch.undo()
    before = _state(tmp_path / "run")
    assert main(["train", str(cfg), "--resume"]) == 0
    state = _state(tmp_path / "run")
    assert state["step"] == 30
    assert [(h["step"], h["epoch"]) for h in state["history"]] == [(10, 1), (20, 2), (30, 3)]
    assert state["bad_evals"] <= before["bad_evals"] + 1


def test_resume_without_a_previous_run_is_an_error(tmp_path, small_task, capsys):
    cfg = _write_config(
        tmp_path / "exp.yaml", small_task, tmp_path / "run", TINY_MODEL, {"epochs": 1}
    )
    assert main(["train", str(cfg), "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err


def test_resume_with_a_different_model_is_an_error(tmp_path, small_task, capsys):
    cfg = _write_config(
        tmp_path / "exp.yaml",
        small_task,
        tmp_path / "run",
        TINY_MODEL,
        {"epochs": 1, "batch_size": 50},
    )
    assert main(["train", str(cfg)]) == 0
    capsys.readouterr()  # the run's lines
    assert main(["train", str(cfg), "--resume", "--set", "model.decoder_hidden=24"]) == 2
    err = capsys.readouterr().err  # names the key, both values and what to do
    assert (
        err.count("\n") == 1
        and (
            "cannot change model.decoder_hidden (16 in the run, 24 asked): leave out --set "
            "model.decoder_hidden to go on with the run's value, or train afresh with --overwrite"
        )
        in err
    )
    # a caller that gives a whole config asks for each of its values
    changed = load_experiment(cfg)
    changed.model.decoder_hidden = 24
    with pytest.raises(ConfigError, match=r"model.decoder_hidden \(16 in the run, 24 asked\)"):
        Trainer(changed, dev_scorer=evaluate_translator).train(resume=True)


def test_resume_goes_on_with_the_runs_own_config_and_says_what_a_set_changes(
    tmp_path, small_task, capsys
):
    """The first run's --sets need not be typed again; this call's --set of a key resume can
    honour is applied and logged, one it cannot honour is one line naming key and values."""
    run = tmp_path / "run"
    cfg = _write_config(tmp_path / "exp.yaml", small_task, run, TINY_MODEL, {"batch_size": 20})
    first = ["--set", "model.decoder_hidden=24", "--set", "train.lr=0.02"]
    assert main(["train", str(cfg), *first, "--set", "train.epochs=1"]) == 0
    capsys.readouterr()

    assert main(["train", str(cfg), "--resume", "--set", "train.epochs=2"]) == 0
    err = capsys.readouterr().err.splitlines()  # beside the run's lines
    assert err[0].startswith(f"resume: goes on with the config saved in {run / 'last'}; ")
    assert f"{cfg} differs in model.decoder_hidden, train.lr (" in err[0]
    assert "resume: train.epochs 1 -> 2" in err
    assert "resume: train.epochs 1 -> 2" in (run / "train.log").read_text()  # the run's record
    saved = Translator.load(run / "last", "cpu").config
    assert (saved.model.decoder_hidden, saved.train.lr, saved.train.epochs) == (24, 0.02, 2)
    assert _state(run)["step"] == 20 and _state(run)["history"][-1]["lr"] == pytest.approx(0.02)

    for change, shown in [
        ("train.lr=0.1", "train.lr (0.02 in the run, 0.1 asked)"),
        ("train.batch_size=10", "train.batch_size (20 in the run, 10 asked)"),
        ("model.decoder_hidden=16", "model.decoder_hidden (24 in the run, 16 asked)"),
    ]:
        assert main(["train", str(cfg), "--resume", "--set", change]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and shown in err and "train.epochs, " in err, err
    assert _state(run)["step"] == 20  # refused before any training
