"""benchmarks/length_curve.py end to end on tiny data: three models trained, scored by length,
drawn and written as JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from repo_scripts import load_script

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def test_smoke_run_writes_the_curve(tmp_path):
    out = tmp_path / "curve"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "length_curve.py"),
            "--smoke",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((out / "length_curve.json").read_text(encoding="utf-8"))
    assert set(report["results"]) == {"none", "bahdanau", "luong-general"}
    for result in report["results"].values():
        buckets = result["buckets"]
        assert sum(b["items"] for b in buckets) == report["sizes"]["test"]
        assert all(0.0 <= b["exact_match"] <= 100.0 and b["cer"] >= 0.0 for b in buckets)
        starts = [b["source_chars"][0] for b in buckets]
        assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert (out / "length_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _benchmark():
    return load_script("benchmarks/length_curve.py")


def test_word_buckets_score_each_length_on_its_own():
    curve = _benchmark()
    right, wrong = "the dog runs on the grass", "the cat sits on the wall"
    test = [("a b", right), ("a b c d e f g h", right), ("w " * 24, right)]
    hyps = [right, wrong, right]  # BLEU needs 4-grams: six-word outputs
    rows = curve.word_buckets(test, hyps)
    # 2 words -> 1-7, 8 words -> 8-9, 24 words -> the last bucket, cut at the longest source;
    # the buckets without a sentence are left out
    assert [r["source_words"] for r in rows] == [[1, 7], [8, 9], [20, 24]]
    assert [r["items"] for r in rows] == [1, 1, 1]
    assert rows[0]["bleu"] == rows[2]["bleu"] == 100.0 and rows[1]["bleu"] < 100.0
    assert rows[0]["chrf"] == 100.0 and rows[1]["chrf"] < 100.0


def test_multi30k_configs_load_as_experiments_of_the_pair(tmp_path):
    from argparse import Namespace

    from attnkit.families.seq2seq.config import load_experiment

    curve = _benchmark()
    args = Namespace(pair="en-fr", epochs=3, minutes=None, seed=0, threads=1)
    for name, model in curve.MODELS.items():
        cfg = load_experiment(curve.multi30k_config(name, model, args, tmp_path))
        assert (cfg.data.task, cfg.data.src_lang, cfg.data.tgt_lang) == ("multi30k", "en", "fr")
        assert cfg.model.attention == model["attention"] and cfg.model.decoder_hidden == 512
        assert cfg.train.epochs == 3 and cfg.train.max_minutes is None
        assert cfg.train.patience is None and cfg.train.average_checkpoints == 0
