"""Checkpoints the trainer leaves behind: the N best kept and averaged; sentencepiece models travel with a checkpoint."""

import json
import random
import shutil

import pytest
import torch
import yaml

from attnkit.experiment import load_experiment
from attnkit.training import checkpoint as ckpt
from attnkit.training.trainer import Trainer
from attnkit.translator import Translator

pytestmark = pytest.mark.slow

TINY_MODEL = {"embedding_dim": 8, "encoder_hidden": 8, "decoder_hidden": 16, "attention_dim": 8, "dropout": 0.0}
WORDS = ("a dog runs in the park . two men play ball on green grass while a small child is watching them "
         "with her mother near the old red house by a river").split()


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
    cfg = {"name": "test", "output_dir": str(tmp / "run"), "data": {**data, **data_extra}, "model": TINY_MODEL,
           "train": {"threads": 1, "progress": False, "seed": 1, "batch_size": 20, "patience": 100, **train},
           "decode": {"beam_size": 2, "max_len_cap": 20}}
    path = tmp / "exp.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return load_experiment(path)


def test_the_n_best_evaluations_are_kept_and_averaged(tmp_path):
    cfg = _config(tmp_path, _write_tsvs(tmp_path, _digits), {"epochs": 1, "eval_every": 2, "average_checkpoints": 3,
                                                             "lr": 0.01})
    Trainer(cfg, log_fn=lambda m: None).train()
    run = tmp_path / "run"
    history = json.loads((run / "last" / "trainer.json").read_text())["state"]["history"]
    assert [h["step"] for h in history] == [2, 4, 6, 8, 10]
    kept = sorted(int(p.name.split("-")[1]) for p in (run / "top").iterdir())
    assert len(kept) == 3 and set(kept) <= {h["step"] for h in history}
    score = {h["step"]: h["dev"]["exact_match"] for h in history}
    assert min(score[s] for s in kept) >= max(score[s] for s in score if s not in kept)  # the best ones stayed

    info = json.loads((run / "averaged" / "trainer.json").read_text())
    # the best single checkpoint and the means of the 2 and 3 best were scored; the best of them was kept
    candidates = info["candidates"]
    assert [len(c["steps"]) for c in candidates] == [1, 2, 3]
    assert all(set(c["steps"]) <= set(kept) for c in candidates)
    assert candidates[0]["dev"]["exact_match"] == max(score[s] for s in kept)  # the best single, re-scored
    best = max(c["dev"]["exact_match"] for c in candidates)
    chosen = next(c for c in candidates if c["dev"]["exact_match"] == best)  # ties go to fewer weights
    assert info["averaged_steps"] == chosen["steps"] and info["dev"] == chosen["dev"]
    assert info["choice"] == ("best single" if len(chosen["steps"]) == 1 else f"average of the {len(chosen['steps'])} best")
    states = [ckpt.read_tensors(run / "top" / f"step-{s:07d}" / "model.safetensors") for s in chosen["steps"]]
    averaged = Translator.load(run / "averaged", "cpu")
    for name, tensor in averaged.model.state_dict().items():
        torch.testing.assert_close(tensor, sum(s[name] for s in states) / len(states), msg=name)
    assert len(averaged.translate(["123", "98765"], beam_size=2)) == 2
    for step in kept:  # each kept evaluation is a checkpoint of its own
        Translator.load(run / "top" / f"step-{step:07d}", "cpu")

    # a fresh run without averaging leaves no stale top/ or averaged/ behind
    plain = _config(tmp_path, _write_tsvs(tmp_path, _digits), {"epochs": 1})
    Trainer(plain, log_fn=lambda m: None).train(overwrite=True)
    assert not (run / "top").exists() and not (run / "averaged").exists()


def test_tokens_and_update_seconds_are_recorded(tmp_path):
    cfg = _config(tmp_path, _write_tsvs(tmp_path, _digits, sizes=(100, 10, 10)), {"epochs": 1})
    Trainer(cfg, log_fn=lambda m: None).train()
    state = json.loads((tmp_path / "run" / "last" / "trainer.json").read_text())["state"]
    targets = [line.split("\t")[1].strip() for line in (tmp_path / "train.tsv").read_text().splitlines()]
    assert state["tokens"] == sum(len(t) + 1 for t in targets)  # characters + </s>
    assert 0 < state["train_s"] <= state["elapsed_s"]
    assert state["history"][-1]["tokens"] == state["tokens"]


def test_sentencepiece_checkpoint_works_after_the_run_directory_is_gone(tmp_path):
    data = _write_tsvs(tmp_path, _sentence)
    cfg = _config(tmp_path, data, {"epochs": 1}, src_level="sentencepiece", tgt_level="sentencepiece", vocab_size=200)
    best = Trainer(cfg, log_fn=lambda m: None).train()
    assert {"source.model", "target.model"} <= {p.name for p in best.iterdir()}
    tokenizers = json.loads((best / "tokenizers.json").read_text())
    assert tokenizers["source"] == {"kind": "sentencepiece", "model_file": "source.model"}

    moved = tmp_path / "elsewhere" / "model"
    shutil.copytree(best, moved)
    shutil.rmtree(tmp_path / "run")  # the tokenizers/ folder of the run goes with it
    translator = Translator.load(moved, "cpu")
    assert translator.src_tokenizer.model_file.parent == moved
    text = "A dog runs in the park ."
    assert translator.src_tokenizer.detokenize(translator.src_tokenizer.tokenize(text)) == text
    (out,) = translator.translate([text], beam_size=2)
    assert isinstance(out.output, str) and "\u2581" not in out.output  # detokenized


def test_two_data_parallel_processes_train_like_one(tmp_path):
    """Without dropout, 2 processes make the updates 1 process makes (up to float rounding)."""
    data = _write_tsvs(tmp_path, _digits)
    results = {}
    for processes in (1, 2):
        (tmp_path / f"p{processes}").mkdir()
        cfg = _config(tmp_path / f"p{processes}", data, {"epochs": 2, "lr": 0.01, "processes": processes})
        messages = []
        Trainer(cfg, log_fn=messages.append).train()
        state = json.loads((cfg.run_dir / "last" / "trainer.json").read_text())["state"]
        results[processes] = (ckpt.read_tensors(cfg.run_dir / "last" / "model.safetensors"), state, messages)
    (one, state_one, _), (two, state_two, messages) = results[1], results[2]
    assert any("2 data-parallel processes" in m for m in messages)
    assert state_two["step"] == state_one["step"] > 0
    assert state_two["tokens"] == state_one["tokens"]
    for name in one:
        torch.testing.assert_close(two[name], one[name], rtol=1e-3, atol=1e-4)


def test_data_parallel_processes_are_a_cpu_setting(tmp_path, monkeypatch):
    import attnkit.training.trainer as trainer_module

    cfg = _config(tmp_path, _write_tsvs(tmp_path, _digits), {"epochs": 1, "processes": 2, "device": "cuda"})
    monkeypatch.setattr(trainer_module, "resolve_device", lambda _: torch.device("cuda"))
    messages = []
    trainer = Trainer(cfg, log_fn=messages.append)
    assert trainer.processes == 1
    assert any("CPU only" in m for m in messages)


def test_cosine_schedule_ends_at_min_lr(tmp_path):
    cfg = _config(tmp_path, _write_tsvs(tmp_path, _digits, sizes=(100, 10, 10)),
                  {"epochs": 3, "scheduler": "cosine", "lr": 0.01, "min_lr": 1e-4})
    Trainer(cfg, log_fn=lambda m: None).train()
    lrs = [h["lr"] for h in json.loads((cfg.run_dir / "last" / "trainer.json").read_text())["state"]["history"]]
    assert len(lrs) == 3 and lrs[0] > lrs[1] > lrs[2]
    assert lrs[2] < 1e-3  # the last update ran near the floor (5 updates an epoch: one step short of it)


def test_train_compile_compiles_the_decoder_step(tmp_path, monkeypatch):
    """train.compile: true hands the decoder step to torch.compile before the first update (the compiled
    function itself is tested against the eager one in the unit tests)."""
    from attnkit.models.seq2seq import Decoder

    calls = []
    monkeypatch.setattr(Decoder, "compile_step", lambda self: calls.append(self))
    cfg = _config(tmp_path, _write_tsvs(tmp_path, _digits, sizes=(40, 10, 10)), {"epochs": 1, "compile": True})
    Trainer(cfg, log_fn=lambda m: None).train()
    assert len(calls) == 1
