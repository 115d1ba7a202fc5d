"""The real-data configs end to end on 200-line slices: CMUdict G2P (WER/PER) and Multi30k
(sentencepiece, BLEU).

Each run loads the shipped config file, shrinks the model with ``--set``-style
overrides, and hands the slices to the same Trainer and evaluation code that
``attnkit train`` / ``attnkit evaluate`` use. Tests that need ../shared/data
skip, naming the missing directory, where it is absent.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repo_scripts import load_script

from attnkit.data.tasks import g2p, multi30k
from attnkit.data.tasks.base import Splits
from attnkit.families.seq2seq.config import load_experiment
from attnkit.families.seq2seq.evaluate import evaluate_translator
from attnkit.families.seq2seq.trainer import Trainer
from attnkit.families.seq2seq.translator import Translator

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
MULTI30K = ["multi30k_de_en", "multi30k_en_de", "multi30k_en_fr", "multi30k_fr_en"]
CONFIGS = ["g2p_cmudict", "g2p_reference", *MULTI30K]
SMALL = [
    "model.embedding_dim=16",
    "model.encoder_hidden=16",
    "model.decoder_hidden=32",
    "model.attention_dim=16",
    "train.threads=1",
    "train.progress=false",
    "train.epochs=1",
    "train.max_minutes=null",
    "decode.max_len_cap=40",
]


def _slice(splits: Splits, n_train=200, n_dev=40, n_test=40) -> Splits:
    """Evenly spaced entries of each split (the files are sorted, so the first 200 would all start
    with 'A')."""

    def take(pairs, n):
        return pairs[:: max(1, len(pairs) // n)][:n]

    return Splits(take(splits.train, n_train), take(splits.dev, n_dev), take(splits.test, n_test))


# ---- the config files (no data needed) -----------------------------------------------------------
@pytest.mark.parametrize("name", CONFIGS)
def test_real_data_configs_parse_and_comment_every_key(name):
    path = REPO / "configs" / f"{name}.yaml"
    cfg = load_experiment(path)
    assert cfg.name == name and cfg.data.directory is None and cfg.data.download
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if re.match(r"^\s*\w+:\s*\S", line) and not line.lstrip().startswith("#"):
            assert "#" in line, f"{path.name}:{number}: key without a comment: {line.strip()}"


def test_strong_configs_keep_and_average_checkpoints():
    for name in ("g2p_cmudict", *MULTI30K):
        cfg = load_experiment(REPO / "configs" / f"{name}.yaml")
        assert (
            cfg.train.average_checkpoints >= 2
            and cfg.train.max_minutes <= 90
            and cfg.decode.beam_size == 5
        )


def test_multi30k_configs_differ_only_in_name_and_languages():
    """One model for every pair: the file's name says its languages, and nothing else differs."""
    reference = load_experiment(REPO / "configs" / "multi30k_de_en.yaml")
    for name in MULTI30K:
        cfg = load_experiment(REPO / "configs" / f"{name}.yaml")
        assert (cfg.data.src_lang, cfg.data.tgt_lang) == tuple(name.split("_")[1:])
        assert (cfg.model, cfg.train, cfg.decode) == (
            reference.model,
            reference.train,
            reference.decode,
        )
        shared = {k: v for k, v in vars(cfg.data).items() if not k.endswith("_lang")}
        assert shared == {k: v for k, v in vars(reference.data).items() if not k.endswith("_lang")}


# ---- a few updates on 200-line slices ------------------------------------------------------------
def test_g2p_cmudict_config_on_a_200_word_slice(tmp_path, shared_data):
    directory = shared_data("cmudict")
    cfg = load_experiment(
        REPO / "configs" / "g2p_cmudict.yaml",
        SMALL
        + [
            f"data.directory={directory}",
            f"output_dir={tmp_path / 'run'}",
            "train.max_tokens=400",
            "train.eval_every=2",
            "train.average_checkpoints=2",
        ],
    )
    splits = _slice(g2p.load(directory))
    Trainer(cfg, splits=splits, log_fn=lambda m: None, dev_scorer=evaluate_translator).train()

    run = tmp_path / "run"
    assert {"best", "last", "top", "averaged"} <= {p.name for p in run.iterdir()}
    averaged = json.loads((run / "averaged" / "trainer.json").read_text())
    assert averaged["metric"] == "wer" and len(averaged["averaged_steps"]) in (
        1,
        2,
    )  # the best of the means and the best single
    assert averaged["choice"] in ("best single", "average of the 2 best")
    translator = Translator.load(run / "averaged", "cpu")
    # the phones are pre-tokenized: the whitespace level
    assert translator.src_tokenizer.kind == "char"
    assert translator.tgt_tokenizer.kind == "whitespace"
    for beam in (1, 2):
        metrics, words, refs, outputs = evaluate_translator(
            translator, "g2p", splits.test, beam_size=beam
        )
        assert set(metrics) == {"wer", "per", "words"}
        assert metrics["words"] == len(g2p.unique_words(splits.test)) == len(outputs)
        assert 0.0 <= metrics["wer"] <= 100.0 and metrics["per"] >= 0.0


@pytest.mark.parametrize("name", ["multi30k_de_en", "multi30k_en_fr"])
def test_multi30k_config_on_a_200_sentence_slice(tmp_path, shared_data, name):
    directory = shared_data("multi30k")
    src_lang, tgt_lang = name.split("_")[1:]
    if not (directory / f"train.{tgt_lang}.gz").is_file():
        pytest.skip(f"{directory / f'train.{tgt_lang}.gz'} is missing")
    cfg = load_experiment(
        REPO / "configs" / f"{name}.yaml",
        SMALL
        + [
            f"data.directory={directory}",
            f"output_dir={tmp_path / 'run'}",
            "data.vocab_size=200",
            "train.max_tokens=600",
        ],
    )
    splits = _slice(multi30k.load(directory, src_lang, tgt_lang), n_dev=30, n_test=30)
    best = Trainer(
        cfg, splits=splits, log_fn=lambda m: None, dev_scorer=evaluate_translator
    ).train()

    assert {"source.model", "target.model"} <= {
        p.name for p in best.iterdir()
    }  # the subword models travel along
    assert json.loads((best / "trainer.json").read_text())["metric"] == "bleu"
    translator = Translator.load(best, "cpu")
    assert translator.src_tokenizer.kind == "sentencepiece"
    source = splits.test[0][0]
    assert translator.src_tokenizer.detokenize(translator.src_tokenizer.tokenize(source)) == source
    metrics, sources, refs, outputs = evaluate_translator(
        translator, "bleu", splits.test, beam_size=2
    )
    assert set(metrics) == {"bleu", "chrf", "sentences"} and metrics["sentences"] == 30
    assert 0.0 <= metrics["bleu"] <= 100.0
    assert all("\u2581" not in t.output for t in outputs)  # detokenized


# ---- the benchmark script's checkpoint choice ----------------------------------------------------
def _real_data_module():
    return load_script("benchmarks/real_data.py")


@pytest.mark.parametrize(
    "averaged_wer, higher_is_better, chosen",
    [(20.0, False, "averaged"), (30.0, False, "best"), (30.0, True, "averaged")],
)
def test_real_data_scores_the_averaged_checkpoint_when_it_is_better_on_dev(
    tmp_path, averaged_wer, higher_is_better, chosen
):
    (tmp_path / "best").mkdir()
    (tmp_path / "best" / "trainer.json").write_text(
        json.dumps({"metric": "wer", "state": {"best": 25.0, "best_step": 300}})
    )
    model, dev = _real_data_module().pick_checkpoint(tmp_path, higher_is_better)
    assert model.name == "best" and dev == {"best": {"update": 300, "wer": 25.0}}
    (tmp_path / "averaged").mkdir()
    (tmp_path / "averaged" / "meta.json").write_text("{}")
    (tmp_path / "averaged" / "trainer.json").write_text(
        json.dumps({"metric": "wer", "averaged_steps": [200, 300], "dev": {"wer": averaged_wer}})
    )
    model, dev = _real_data_module().pick_checkpoint(tmp_path, higher_is_better)
    assert model.name == chosen and dev["averaged"] == {"updates": [200, 300], "wer": averaged_wer}
    assert "cpu" in _real_data_module().describe()


# ---- the benchmark script with --seeds: members and their ensemble -------------------------------
def test_real_data_with_seeds_scores_every_member_and_the_ensemble(tmp_path):
    lines = [
        f"{w}\t{w[::-1]}\n"
        for w in ("ab", "ba", "abc", "cab", "bca", "cc", "aab", "bba", "cba", "acb")
    ]
    for split in ("train", "dev", "test"):
        (tmp_path / f"{split}.tsv").write_text("".join(lines), encoding="utf-8")
    data = {"task": "parallel", **{s: str(tmp_path / f"{s}.tsv") for s in ("train", "dev", "test")}}
    config = tmp_path / "tiny.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "tiny",
                "data": data,
                "model": {
                    "embedding_dim": 8,
                    "encoder_hidden": 8,
                    "decoder_hidden": 16,
                    "attention_dim": 8,
                },
                "train": {"epochs": 1, "batch_size": 5, "threads": 1},
                "decode": {"max_len_cap": 6},
            }
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "real_data.py"),
            "--config",
            str(config),
            "--seeds",
            "3,4",
            "--jobs",
            "2",
            "--beam",
            "2",
            "--runs",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["seeds"] == [3, 4] and [m["seed"] for m in result["members"]] == [3, 4]
    for member in result["members"]:
        assert member["greedy"]["items"] == 10 and member["beam2"]["items"] == 10
    assert result["ensemble"]["checkpoints"] == [
        str(tmp_path / "runs" / f"tiny-seed{s}" / "best") for s in (3, 4)
    ]
    assert (
        result["ensemble"]["greedy"]["items"] == 10
        and 0 <= result["ensemble"]["beam2"]["exact_match"] <= 100
    )
    # the two members really are different models
    first, second = (
        tmp_path / "runs" / f"tiny-seed{s}" / "best" / "model.safetensors" for s in (3, 4)
    )
    assert first.read_bytes() != second.read_bytes()


@pytest.mark.parametrize("seeds", ["5", "5,5"])
def test_real_data_rejects_a_single_or_repeated_seed(seeds):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "real_data.py"),
            "--config",
            str(REPO / "configs" / "g2p_cmudict.yaml"),
            "--seeds",
            seeds,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "at least two different seeds" in proc.stderr
