"""A loaded memory-network checkpoint reads its bAbI split from ``data_dir`` or
``$ATTNKIT_DATA_DIR/babi``, never from the ``data.directory`` its config keeps (relative to where
training ran, or any path a crafted checkpoint names)."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnkit
from attnkit.cli import main
from attnkit.data.babi import parse_stories
from attnkit.data.babi_vectors import BabiVocab
from attnkit.errors import DataError
from attnkit.families.memnet.adapter import save_checkpoint
from attnkit.families.memnet.config import parse_config
from attnkit.families.memnet.faults import _TEST, _TRAIN, _stories
from attnkit.models.memn2n import MemN2N
from attnkit.training.state import TrainerState


def _checkpoint(root: Path, directory: str) -> Path:
    """A tiny untrained checkpoint whose config keeps ``data.directory: directory``; the bAbI
    files of its task in ``root/data``."""
    data = root / "data"
    for rel, text in ((_TRAIN, _stories(8, 0)), (_TEST, _stories(5, 1))):
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_text(text, encoding="utf-8")
    cfg = parse_config(
        {
            "family": "memnet",
            "data": {"task": 1, "directory": directory, "memory_size": 4},
            "model": {"hops": 2, "dim": 6},
        }
    )
    vocab = BabiVocab.build(parse_stories(_stories(8, 0), "train", 1, 4), 4)
    model = MemN2N(cfg.model, len(vocab), 4)
    save_checkpoint(root / "ckpt", model, cfg, vocab, TrainerState())
    return root / "ckpt"


def test_a_relative_data_directory_is_not_followed_from_another_directory(tmp_path, monkeypatch):
    ckpt = _checkpoint(tmp_path, ".")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("ATTNKIT_DATA_DIR", raising=False)
    model = attnkit.load(ckpt)
    scores = model.evaluate("test", out=tmp_path / "eval", data_dir=tmp_path / "data")
    assert scores["questions"] == 5  # the five test stories' questions, read from data_dir
    with pytest.raises(DataError) as err:
        model.evaluate("test", out=tmp_path / "eval2")
    message = str(err.value)
    assert "\n" not in message and "ATTNKIT_DATA_DIR" in message and "not followed" in message


def test_the_checkpoint_directory_is_ignored_even_where_it_holds_the_data(tmp_path, monkeypatch):
    # the config names the very folder the data are in: still not read
    ckpt = _checkpoint(tmp_path, str(tmp_path / "data"))
    monkeypatch.delenv("ATTNKIT_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="not followed"):
        attnkit.load(ckpt).explain_split("test", 2, out=tmp_path / "x")


def test_attnkit_data_dir_holding_babi_is_read(tmp_path, monkeypatch):
    ckpt = _checkpoint(tmp_path, "/nonexistent/babi")
    root = tmp_path / "root"
    (root / "babi").mkdir(parents=True)
    (tmp_path / "data" / "en").rename(root / "babi" / "en")
    monkeypatch.setenv("ATTNKIT_DATA_DIR", str(root))
    assert attnkit.load(ckpt).evaluate("dev", out=tmp_path / "eval")["questions"] == 1


def test_the_cli_takes_data_dir_and_names_a_missing_file(tmp_path, monkeypatch, capsys):
    ckpt = _checkpoint(tmp_path, ".")
    monkeypatch.delenv("ATTNKIT_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path / "data")  # where "." would have found the files
    args = ["evaluate", "--model", str(ckpt), "--out", str(tmp_path / "e"), "--json"]
    assert main([*args, "--data-dir", str(tmp_path / "data")]) == 0
    assert '"questions": 5' in capsys.readouterr().out
    assert main([*args, "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "missing bAbI file qa1_single-supporting-fact_" in err
