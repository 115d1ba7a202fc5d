"""Every family's data readers read through the bounded reader: regular files only, size and
line caps checked as the bytes arrive, one DataError naming the file (and line); parsing is
linear in the input. Each hostile case finishes in well under a second."""

from __future__ import annotations

import os
import time

import pytest

from attnkit.data import babi
from attnkit.data.bounded import ascii_int, read_regular_bytes, text_lines
from attnkit.data.graph.edge_list import read_edge_list
from attnkit.data.tasks import sst
from attnkit.errors import DataError


def _one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message and len(message) < 400
    return message


@pytest.fixture
def hostile(tmp_path):
    """name -> a path that is no readable data file: a FIFO, a device, a directory."""
    fifo = tmp_path / "fifo.tsv"
    os.mkfifo(fifo)  # no writer: an open() that waits would hang the test
    return {"fifo": fifo, "device": "/dev/zero", "directory": tmp_path}


def _graph_files(tmp_path, nodes: str, edges: str = "a\tb\n"):
    (tmp_path / "nodes.tsv").write_text(nodes)
    (tmp_path / "edges.tsv").write_text(edges)
    return tmp_path / "nodes.tsv", tmp_path / "edges.tsv"


READERS = {
    "edge list (nodes)": lambda p, tmp: read_edge_list(p, _graph_files(tmp, "a\tx\ttrain\t1\n")[1]),
    "edge list (edges)": lambda p, tmp: read_edge_list(_graph_files(tmp, "a\tx\ttrain\t1\n")[0], p),
    "text tsv": lambda p, tmp: sst.read_tsv(p),
    "sst trees": lambda p, tmp: sst.read_trees(p),
    "babi story": lambda p, tmp: babi.read_file(p),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_readers_refuse_what_is_not_a_regular_file(reader, kind, hostile, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    start = time.monotonic()
    with pytest.raises(DataError) as caught:
        READERS[reader](hostile[kind], work)
    assert time.monotonic() - start < 5
    message = _one_line(caught)
    assert str(hostile[kind]) in message and "not a regular file" in message


@pytest.mark.parametrize("reader", ["edge list (nodes)", "text tsv", "sst trees"])
def test_an_endless_line_stops_at_the_line_cap(reader, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_MAX_LINE_KB", "1")
    path = tmp_path / "long.tsv"
    path.write_bytes(b"x" * 50_000 + b"\n")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(DataError) as caught:
        READERS[reader](path, work)
    assert f"{path}:1: line longer than 1,024 bytes" in _one_line(caught)


def test_a_file_above_the_size_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_MAX_INPUT_MB", "1")
    path = tmp_path / "big.tsv"
    path.write_bytes(b"pos\tgood\n" * 200_000)  # 1.8 MB
    with pytest.raises(DataError, match="above the limit of 1,048,576"):
        sst.read_tsv(path)
    with pytest.raises(DataError, match="larger than the limit of 10 bytes"):
        read_regular_bytes(path, 10)


def test_text_lines_names_the_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"one\n\ntwo\r\n\xff\n")
    lines = text_lines(path)
    assert [next(lines), next(lines)] == [(1, "one"), (3, "two")]
    with pytest.raises(DataError, match=r"t\.txt:4: not UTF-8"):
        next(lines)


def test_node_features_must_be_finite(tmp_path):
    for bad in ("nan", "inf", "1e39"):
        nodes, edges = _graph_files(tmp_path, f"a\tx\ttrain\t1 2\nb\ty\ttest\t3 {bad}\n")
        with pytest.raises(DataError) as caught:
            read_edge_list(nodes, edges)
        assert f"{nodes}:2: features must be finite" in _one_line(caught)


def test_ascii_int_takes_only_short_ascii_digits():
    assert ascii_int("0") == 0 and ascii_int("123") == 123
    for bad in ("", "²", "١٢", "-1", "+1", " 1", "1.0", "9" * 19, "9" * 4400):
        assert ascii_int(bad) is None, bad


@pytest.mark.parametrize("head", ["²", "9" * 4400, "1²"])
def test_babi_ids_that_isdigit_accepts_are_one_error(head):
    with pytest.raises(DataError) as caught:
        babi.parse_stories(f"{head} Mary went home.\n", "s.txt")
    assert _one_line(caught).startswith("s.txt:1: neither a fact")
    with pytest.raises(DataError) as caught:
        babi.parse_stories(f"1 Mary went home.\n2 Where is Mary?\thome\t{head}\n", "s.txt")
    assert _one_line(caught).startswith("s.txt:2: supporting id")


def test_babi_parsing_is_linear_and_a_story_is_capped():
    # 200,000 lines in one story: refused at the story cap, at once
    story = "".join(f"{i} Mary went to the kitchen.\n" for i in range(1, 200_001))
    # CPU time of this process, not wall time: other jobs on the machine do not count
    start = time.process_time()
    with pytest.raises(DataError) as caught:
        babi.parse_stories(story, "long.txt")
    assert time.process_time() - start < 2
    assert _one_line(caught).startswith(f"long.txt:{babi.MAX_STORY_LINES + 1}: a story of over")
    # stories at the cap, a question after every fact: linear with a memory size
    lines = []
    for _ in range(100):
        for i in range(1, babi.MAX_STORY_LINES, 2):
            lines += [f"{i} Mary went home.", f"{i + 1} Where is Mary?\thome\t{i}"]
    start = time.process_time()
    questions = babi.parse_stories("\n".join(lines), "many.txt", memory_size=50)
    assert len(questions) == 100 * (babi.MAX_STORY_LINES // 2)
    assert time.process_time() - start < 5
    assert questions[-1].supporting == (49,) and len(questions[-1].memories) == 50


def test_babi_memories_held_by_a_text_are_capped(monkeypatch):
    monkeypatch.setattr(babi, "MAX_MEMORY_SLOTS", 100)
    text = "\n".join(["1 Mary went home."] + [f"{i} Where?\thome\t1" for i in range(2, 200)])
    with pytest.raises(DataError) as caught:
        babi.parse_stories(text, "s.txt")
    assert "s.txt:102: the questions so far hold over 100 memories" in _one_line(caught)


def test_checkpoint_numbers_that_isdigit_accepts_are_refused_not_raised(tmp_path):
    from pathlib import Path

    from attnkit.errors import CheckpointError
    from attnkit.training.averaging import _step_of
    from attnkit.training.resume import _parameter_id

    for pid in ("²", "9" * 4400):
        with pytest.raises(CheckpointError, match="names no parameter"):
            _parameter_id(f"state.{pid}.exp_avg", 3, "trainer.safetensors")
        assert _step_of(Path(f"step-{pid}")) is None
    assert _parameter_id("state.2.exp_avg", 3, "t") == (2, "exp_avg")
    assert _step_of(Path("step-0001200")) == 1200
