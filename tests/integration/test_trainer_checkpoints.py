"""Checkpoints the trainer leaves behind: the N best kept and averaged; sentencepiece models travel
with a checkpoint."""

import json
import os
import random
import shutil

import pytest
import torch
import yaml
from safetensors.torch import save_file

from attnkit import checkpoint as ckpt
from attnkit.families.seq2seq import adapter as adapter_module
from attnkit.families.seq2seq.config import load_experiment
from attnkit.families.seq2seq.evaluate import evaluate_translator
from attnkit.families.seq2seq.trainer import Trainer
from attnkit.families.seq2seq.translator import Translator

pytestmark = pytest.mark.slow

TINY_MODEL = {
    "embedding_dim": 8,
    "encoder_hidden": 8,
    "decoder_hidden": 16,
    "attention_dim": 8,
    "dropout": 0.0,
}
WORDS = (
    "a dog runs in the park . two men play ball on green grass while a small child is watching "
    "them with her mother near the old red house by a river"
).split()


def _write_tsvs(tmp, make_pair, sizes=(200, 20, 10), seed=0):
    """Train/dev/test TSVs of ``make_pair(rng)`` pairs, no source in two splits."""
    rng, seen, paths = random.Random(seed), set(), {}
    for name, n in zip(("train", "dev", "test"), sizes):
        lines = []
        while len(lines) < n:
            src, tgt = make_pair(rng)
            if src not in seen:
                seen.add(src)
                lines.append(f"{src}\t{tgt}\n")
        paths[name] = tmp / f"{name}.tsv"
        paths[name].write_text("".join(lines), encoding="utf-8")
    return {"task": "parallel", **{k: str(v) for k, v in paths.items()}}


def _digits(rng):
    s = "".join(rng.choice("0123456789") for _ in range(rng.randint(2, 6)))
    return s, s[::-1]


def _sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 9))]
    return " ".join(words).capitalize(), " ".join(reversed(words))


def _config(tmp, data, train, **data_extra):
    cfg = {
        "name": "test",
        "output_dir": str(tmp / "run"),
        "data": {**data, **data_extra},
        "model": TINY_MODEL,
        "train": {
            "threads": 1,
            "progress": False,
            "seed": 1,
            "batch_size": 20,
            "patience": 100,
            **train,
        },
        "decode": {"beam_size": 2, "max_len_cap": 20},
    }
    path = tmp / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return load_experiment(path)


def test_the_n_best_evaluations_are_kept_and_averaged(tmp_path):
    cfg = _config(
        tmp_path,
        _write_tsvs(tmp_path, _digits),
        {"epochs": 1, "eval_every": 2, "average_checkpoints": 3, "lr": 0.01},
    )
    Trainer(cfg, log_fn=lambda m: None, dev_scorer=evaluate_translator).train()
    run = tmp_path / "run"
    history = json.loads((run / "last" / "trainer.json").read_text())["state"]["history"]
    assert [h["step"] for h in history] == [2, 4, 6, 8, 10]
    kept = sorted(int(p.name.split("-")[1]) for p in (run / "top").iterdir())
    assert len(kept) == 3 and set(kept) <= {h["step"] for h in history}
    score = {h["step"]: h["dev"]["exact_match"] for h in history}
    assert min(score[s] for s in kept) >= max(
        score[s] for s in score if s not in kept
    )  # the best ones stayed

    info = json.loads((run / "averaged" / "trainer.json").read_text())
    # the best single checkpoint and the means of the 2 and 3 best were scored; the best of them was
    # kept
    candidates = info["candidates"]
    assert [len(c["steps"]) for c in candidates] == [1, 2, 3]
    assert all(set(c["steps"]) <= set(kept) for c in candidates)
    assert candidates[0]["dev"]["exact_match"] == max(
        score[s] for s in kept
    )  # the best single, re-scored
    best = max(c["dev"]["exact_match"] for c in candidates)
    chosen = next(
        c for c in candidates if c["dev"]["exact_match"] == best
    )  # ties go to fewer weights
    assert info["averaged_steps"] == chosen["steps"] and info["dev"] == chosen["dev"]
    assert info["choice"] == (
        "best single"
        if len(chosen["steps"]) == 1
        else f"average of the {len(chosen['steps'])} best"
    )
    states = [
        ckpt.read_tensors(run / "top" / f"step-{s:07d}" / "model.safetensors")
        for s in chosen["steps"]
    ]
    averaged = Translator.load(run / "averaged", "cpu")
    for name, tensor in averaged.model.state_dict().items():
        torch.testing.assert_close(tensor, sum(s[name] for s in states) / len(states), msg=name)
    assert len(averaged.translate(["123", "98765"], beam_size=2)) == 2
    for step in kept:  # each kept evaluation is a checkpoint of its own
        Translator.load(run / "top" / f"step-{step:07d}", "cpu")

    # a fresh run without averaging leaves no stale top/ or averaged/ behind
    plain = _config(tmp_path, _write_tsvs(tmp_path, _digits), {"epochs": 1})
    Trainer(plain, log_fn=lambda m: None, dev_scorer=evaluate_translator).train(overwrite=True)
    assert not (run / "top").exists() and not (run / "averaged").exists()


def _modes(directory) -> dict[str, int]:
    """Path under ``directory`` -> permission bits; the directory itself is '.'."""
    found = {".": directory.stat().st_mode & 0o7777}
    for path in directory.rglob("*"):
        found[str(path.relative_to(directory))] = path.stat().st_mode & 0o7777
    return found


def test_a_run_directory_follows_the_umask_and_only_last_holds_trainer_state(tmp_path, capsys):
    """Under umask 027 every file of the run (checkpoints, top/, averaged/, tokenizers/, logs,
    TensorBoard, an evaluation) is 0640 and every directory 0750: the group can read it. best,
    top/* and averaged hold what decoding needs; last also the optimizer, schedule and RNG."""
    from attnkit.cli import main

    cfg = _config(
        tmp_path,
        _write_tsvs(tmp_path, _sentence, sizes=(100, 10, 10)),
        {"epochs": 2, "eval_every": 3, "average_checkpoints": 2, "tensorboard": True},
        src_level="sentencepiece",
        tgt_level="sentencepiece",
        vocab_size=60,
    )
    previous = os.umask(0o027)
    try:
        Trainer(cfg, log_fn=lambda m: None, dev_scorer=evaluate_translator).train()
        run = cfg.run_dir
        argv = ["evaluate", "--model", run / "best", "--split", "dev", "--beam", "1", "--json"]
        argv += ["--data-dir", tmp_path]  # the split's file by its training name
        assert main([str(a) for a in argv]) == 0
    finally:
        os.umask(previous)
    modes = _modes(run)
    names = {name.split("/")[0] for name in modes}
    assert {"best", "last", "top", "averaged", "tokenizers", "tensorboard", "eval"} <= names
    assert {"train.log", "metrics.jsonl", "last/trainer.safetensors"} <= set(modes)
    wrong = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o750 if (run / name).is_dir() else 0o640)
    }
    assert not wrong, wrong

    checkpoints = [run / "best", run / "averaged", *sorted((run / "top").iterdir())]
    for directory in checkpoints:
        assert not (directory / "trainer.safetensors").exists(), directory
        info = json.loads((directory / "trainer.json").read_text())
        assert not {"optimizer", "scheduler"} & set(info), directory
        (out,) = Translator.load(directory, "cpu").translate(["A dog runs ."])
        assert isinstance(out.output, str)
    best = json.loads((run / "best" / "trainer.json").read_text())
    assert best["metric"] == "bleu" and best["state"]["step"] == best["state"]["best_step"]
    last = json.loads((run / "last" / "trainer.json").read_text())
    assert {"optimizer", "scheduler", "state"} <= set(last)

    sizes = {n: sum(p.stat().st_size for p in (run / n).iterdir()) for n in ("best", "last")}
    moments = (run / "last" / "model.safetensors").stat().st_size * 2  # Adam's two
    assert sizes["last"] - sizes["best"] >= moments, sizes
    print(f"checkpoint sizes: best {sizes['best']:,} bytes, last {sizes['last']:,} bytes")


def test_tokens_and_update_seconds_are_recorded(tmp_path):
    cfg = _config(tmp_path, _write_tsvs(tmp_path, _digits, sizes=(100, 10, 10)), {"epochs": 1})
    Trainer(cfg, log_fn=lambda m: None, dev_scorer=evaluate_translator).train()
    state = json.loads((tmp_path / "run" / "last" / "trainer.json").read_text())["state"]
    targets = [
        line.split("\t")[1].strip() for line in (tmp_path / "train.tsv").read_text().splitlines()
    ]
    assert state["tokens"] == sum(len(t) + 1 for t in targets)  # characters + </s>
    assert 0 < state["train_s"] <= state["elapsed_s"]
    assert state["history"][-1]["tokens"] == state["tokens"]


def test_sentencepiece_checkpoint_works_after_the_run_directory_is_gone(tmp_path):
    data = _write_tsvs(tmp_path, _sentence)
    cfg = _config(
        tmp_path,
        data,
        {"epochs": 1},
        src_level="sentencepiece",
        tgt_level="sentencepiece",
        vocab_size=200,
    )
    best = Trainer(cfg, log_fn=lambda m: None, dev_scorer=evaluate_translator).train()
    assert {"source.model", "target.model"} <= {p.name for p in best.iterdir()}
    tokenizers = json.loads((best / "tokenizers.json").read_text())
    assert tokenizers["source"] == {
        "kind": "sentencepiece",
        "model_file": "source.model",
        "normalize": "NFC",  # data.normalize's default, recorded
    }

    moved = tmp_path / "elsewhere" / "model"
    shutil.copytree(best, moved)
    shutil.rmtree(tmp_path / "run")  # the tokenizers/ folder of the run goes with it
    translator = Translator.load(moved, "cpu")
    assert translator.src_tokenizer.model_file.parent == moved
    text = "A dog runs in the park ."
    assert translator.src_tokenizer.detokenize(translator.src_tokenizer.tokenize(text)) == text
    (out,) = translator.translate([text], beam_size=2)
    assert isinstance(out.output, str) and "\u2581" not in out.output  # detokenized


def test_cosine_schedule_ends_at_min_lr(tmp_path):
    cfg = _config(
        tmp_path,
        _write_tsvs(tmp_path, _digits, sizes=(100, 10, 10)),
        {"epochs": 3, "scheduler": "cosine", "lr": 0.01, "min_lr": 1e-4},
    )
    Trainer(cfg, log_fn=lambda m: None, dev_scorer=evaluate_translator).train()
    lrs = [
        h["lr"]
        for h in json.loads((cfg.run_dir / "last" / "trainer.json").read_text())["state"]["history"]
    ]
    assert len(lrs) == 3 and lrs[0] > lrs[1] > lrs[2]
    assert (
        lrs[2] < 1e-3
    )  # the last update ran near the floor (5 updates an epoch: one step short of it)


def test_train_backend_is_set_logged_and_recorded(tmp_path, monkeypatch):
    """train.backend: compile hands the decoder step to torch.compile before the first update (the
    compiled function itself is tested against the eager one in the unit tests); the resolved
    backend is logged at the start and written into trainer.json."""
    compiled = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: compiled.append(fn) or fn)
    cfg = _config(
        tmp_path,
        _write_tsvs(tmp_path, _digits, sizes=(40, 10, 10)),
        {"epochs": 1, "backend": "compile"},
    )
    lines = []
    Trainer(cfg, log_fn=lines.append, dev_scorer=evaluate_translator).train()
    assert len(compiled) == 1
    assert any(
        line.startswith("backend: compile (fused cells), torch.compile'd decoder step")
        for line in lines
    ), lines
    saved = json.loads((cfg.run_dir / "last" / "trainer.json").read_text())["backend"]
    assert saved["name"] == "compile" and saved["describe"].startswith("backend: compile")


# ---- resume and divergence through the command line ---------------------------------------------
def _cli_fails(capsys, argv, *needles) -> str:
    """``attnkit argv`` exits 2 with one line 'attnkit: error: ...' holding every needle."""
    from attnkit.cli import main

    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("attnkit: error: ")]
    assert code == 2 and len(errors) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert str(needle) in errors[0], (needle, errors[0])
    return errors[0]


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """(config file, run directory) of one epoch trained by ``attnkit train``."""
    from attnkit.cli import main

    tmp = tmp_path_factory.mktemp("cli_resume")
    _config(tmp, _write_tsvs(tmp, _digits, sizes=(60, 10, 10)), {"epochs": 1})
    path = tmp / "exp.yaml"
    assert main(["train", str(path), "--output-dir", str(tmp / "run")]) == 0
    return path, tmp / "run"


def _damage_tensors(change):
    def damage(last):
        tensors = ckpt.read_tensors(last / "trainer.safetensors")
        change(tensors)
        save_file(tensors, str(last / "trainer.safetensors"))

    return damage, "trainer.safetensors"


def _damage_json(change):
    def damage(last):
        info = json.loads((last / "trainer.json").read_text())
        change(info)
        (last / "trainer.json").write_text(json.dumps(info))

    return damage, "trainer.json"


def _put(key, value):
    return lambda tensors: tensors.update({key: value(tensors[key]) if callable(value) else value})


DAMAGE = {  # name -> ((damage, file), what the error line names)
    "moment broadcasts": (
        _damage_tensors(_put("optimizer.0.exp_avg", torch.zeros(8))),
        "optimizer.0.exp_avg",
    ),
    "moment too short": (
        _damage_tensors(_put("optimizer.2.exp_avg_sq", torch.ones(2))),
        "optimizer.2.exp_avg_sq",
    ),
    "moment int64": (_damage_tensors(_put("optimizer.1.exp_avg", torch.Tensor.long)), "int64"),
    "moment NaN": (
        _damage_tensors(_put("optimizer.3.exp_avg", lambda t: t.fill_(float("nan")))),
        "optimizer.3.exp_avg",
    ),
    "no rng.torch": (_damage_tensors(lambda t: t.pop("rng.torch")), "'rng.torch' is missing"),
    "no optimizer": (_damage_json(lambda i: i.pop("optimizer")), "'optimizer' is missing"),
    "unknown state field": (
        _damage_json(lambda i: i["state"].update(bogus=1)),
        "unknown key 'bogus'",
    ),
    "step not a number": (_damage_json(lambda i: i["state"].update(step="x")), "state.step"),
}


@pytest.mark.parametrize("name", DAMAGE)
def test_resume_refuses_damaged_trainer_state_in_one_line(capsys, cli_run, tmp_path, name):
    config, run = cli_run
    shutil.copytree(run, tmp_path / "run")
    last = tmp_path / "run" / "last"
    (damage, file), needle = DAMAGE[name]
    damage(last)
    before = {p.name: p.read_bytes() for p in last.iterdir()}
    _cli_fails(
        capsys,
        ["train", config, "--output-dir", tmp_path / "run", "--resume", "--set", "train.epochs=2"],
        last / file,
        needle,
    )
    assert {p.name: p.read_bytes() for p in last.iterdir()} == before  # `last` is not overwritten


@pytest.mark.parametrize(
    "eval_every, needles",
    [
        (0, ("update 3: ", "best not written: ", "NaN or infinite")),  # 3 updates an epoch
        (1000, ("update 21: 20 updates in a row", "train.max_bad_updates: 20")),  # no evaluation
    ],
)
def test_a_diverging_run_stops_naming_the_update_and_writes_no_nan(
    capsys, cli_run, tmp_path, eval_every, needles
):
    config, _ = cli_run
    run = tmp_path / "run"
    _cli_fails(
        capsys,
        [
            "train",
            config,
            "--output-dir",
            run,
            "--set",
            "train.lr=1e38",
            "--set",
            "train.epochs=10",
            "--set",
            f"train.eval_every={eval_every}",
        ],
        *needles,
    )
    assert not list(run.rglob("meta.json"))  # the first update already overflowed: nothing to save


def test_skipped_updates_are_counted_and_logged(cli_run, tmp_path, monkeypatch):
    _, run = cli_run
    cfg = load_experiment(run.parent / "exp.yaml")
    cfg.output_dir, cfg.train.epochs = str(tmp_path / "run"), 2
    logged = []
    trainer = Trainer(cfg, log_fn=logged.append, dev_scorer=evaluate_translator)
    real = adapter_module.token_loss_backward
    calls = []

    def every_third_is_nan(model, batch, *args, **kwargs):
        calls.append(1)
        loss_sum, correct, tokens = real(model, batch, *args, **kwargs)
        if len(calls) % 3 == 0:
            next(model.parameters()).grad.fill_(float("nan"))
        return loss_sum, correct, tokens

    monkeypatch.setattr(adapter_module, "token_loss_backward", every_third_is_nan)
    trainer.train()
    state = json.loads((tmp_path / "run" / "last" / "trainer.json").read_text())["state"]
    assert state["skipped_updates"] == len(calls) // 3 > 0
    assert state["history"][-1]["skipped_updates"] == state["skipped_updates"]
    assert sum(": skipped, not finite (" in line for line in logged) == state["skipped_updates"]
    assert f"({state['skipped_updates']} skipped, not finite)" in logged[-1]
    Translator.load(tmp_path / "run" / "last", "cpu")  # finite weights


# dev scores of successive evaluations where exact match and BLEU disagree: by BLEU the second is
# best and the next two are worse (early stopping, a plateau cut); by exact match the fourth is
# best and nothing stalls. The last two score the averaging candidates (best single, mean of 2).
SCRIPTED_BLEU = [10.0, 30.0, 20.0, 25.0, 30.0, 40.0]
SCRIPTED_EXACT = [90.0, 0.0, 95.0, 99.0, 0.0, 0.0]


@pytest.mark.parametrize("metric", ["bleu", "wer"])
def test_data_metric_picks_best_stops_early_cuts_lr_and_ranks_averaging(tmp_path, metric):
    """With data.metric bleu (higher is better) or wer (lower: scripted as 100 - BLEU), the
    trainer selects by that metric, not by exact match, in every decision it makes."""
    scripted = iter(zip(SCRIPTED_BLEU, SCRIPTED_EXACT))
    real = evaluate_translator

    def scripted_evaluation(translator, family, pairs, **kwargs):
        assert family == "text"
        _, sources, refs, translations = real(translator, family, pairs, **kwargs)
        bleu, exact = next(scripted)
        scores = {"bleu": bleu, "chrf": bleu, "wer": 100 - bleu, "cer": 100 - bleu}
        return (
            {**scores, "exact_match": exact, "sentences": len(sources)},
            sources,
            refs,
            translations,
        )

    train = {"epochs": 1, "eval_every": 1, "patience": 2, "lr": 0.01, "lr_patience": 1}
    cfg = _config(
        tmp_path,
        _write_tsvs(tmp_path, _sentence, sizes=(100, 10, 10)),
        {**train, "average_checkpoints": 2, "tensorboard": False},
        src_level="word",
        tgt_level="word",
        metric=metric,
    )
    lines = []
    Trainer(cfg, log_fn=lines.append, dev_scorer=scripted_evaluation).train()
    run = tmp_path / "run"
    state = json.loads((run / "last" / "trainer.json").read_text())
    assert state["metric"] == metric
    history = state["state"]["history"]
    assert [h["step"] for h in history] == [1, 2, 3, 4]  # stopped early: 2 evaluations worse
    assert state["state"]["best_step"] == 2
    assert json.loads((run / "best" / "trainer.json").read_text())["state"]["step"] == 2
    lrs = [h["lr"] for h in history]
    assert lrs[:3] == [0.01] * 3 and lrs[3] == pytest.approx(0.005)  # the plateau followed it
    averaged = json.loads((run / "averaged" / "trainer.json").read_text())
    assert averaged["averaged_steps"] == [2, 4] and averaged["choice"] == "average of the 2 best"
    assert any(f"dev {metric} " in line and "(best)" in line for line in lines)
