"""``attnkit evaluate`` on long inputs (lists of 20 numbers, about 500 characters): the report's
attention records stay within their bound of map cells, and ``--examples 0`` writes none."""

from __future__ import annotations

import json

import pytest
import yaml

from attnkit.cli import main
from attnkit.evaluation.examples import MAX_CELLS
from attnkit.viz import load_records

TEST_LISTS = 12


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny Transformer trained for one update on lists of 20 English numbers."""
    tmp = tmp_path_factory.mktemp("long_report")
    cfg = {
        "name": "long",
        "data": {
            "task": "numbers",
            "seed": 0,
            "languages": ["en"],
            "direction": "words2digits",
            "max_number": 999,
            "count": 20,
            "train_size": 8,
            "dev_size": 2,
            "test_size": TEST_LISTS,
            "src_level": "char",
            "tgt_level": "char",
            "max_src_len": 659,
            "max_tgt_len": 81,
        },
        "model": {
            "arch": "transformer",
            "embedding_dim": 16,
            "encoder_layers": 1,
            "decoder_layers": 2,
            "heads": 2,
            "ff_dim": 32,
            "dropout": 0.0,
        },
        "train": {"epochs": 1, "batch_size": 8, "threads": 1, "progress": False},
        "decode": {"beam_size": 1, "max_len_cap": 100},
    }
    (tmp / "exp.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    assert main(["train", str(tmp / "exp.yaml"), "--output-dir", str(tmp / "run")]) == 0
    return tmp / "run"


def _cells(record) -> int:
    maps = [record.weights, record.rollout, record.flow]
    heads = 0 if record.heads is None else record.heads.size
    return heads + sum(m.size for m in maps if m is not None)


def test_a_long_input_report_keeps_its_maps_within_the_bound(run, tmp_path):
    out = tmp_path / "eval"
    assert main(["evaluate", "--model", str(run / "best"), "--beam", "1", "--out", str(out)]) == 0
    scores = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    assert scores["greedy"]["items"] == TEST_LISTS
    records = load_records(out / "attention.json")
    assert 0 < len(records) < TEST_LISTS  # every list is long: the bound leaves some out
    assert all(len(r.source_tokens) > 300 for r in records)
    assert sum(_cells(r) for r in records) <= MAX_CELLS
    # about 10 bytes a cell as JSON; the page carries the same records once more
    assert (out / "attention.json").stat().st_size < 12 * MAX_CELLS
    assert (out / "report.html").stat().st_size < 30 * MAX_CELLS
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f"{len(records)} of" in page and "bound of 2,000,000 cells" in page


def test_examples_0_scores_without_attention_records(run, tmp_path):
    out = tmp_path / "eval"
    command = ["evaluate", "--model", str(run / "best"), "--beam", "1", "--out", str(out)]
    assert main([*command, "--examples", "0"]) == 0
    assert load_records(out / "attention.json") == []
    assert len((out / "hyps.greedy.txt").read_text(encoding="utf-8").splitlines()) == TEST_LISTS
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Examples (0)" in page and "No example is pictured" in page
    assert (out / "report.html").stat().st_size < 200_000


def test_examples_must_not_be_negative(run, tmp_path, capsys):
    command = ["evaluate", "--model", str(run / "best"), "--out", str(tmp_path)]
    assert main([*command, "--examples", "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "examples must be at least 0, got -1" in err and len(err.splitlines()) == 1
