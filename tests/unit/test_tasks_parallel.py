"""Loading the user's own parallel text: good files load, every error names file and line."""

import pytest

from attnkit.data.tasks.base import Splits
from attnkit.data.tasks.parallel import load_parallel, load_splits, load_tsv
from attnkit.errors import AttnkitError, DataError


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_tsv_loads_with_crlf_and_final_newline(tmp_path):
    f = _write(tmp_path / "a.tsv", "hallo\thello\r\nzwölf\ttwelve\r\n".encode())
    assert load_tsv(f) == [("hallo", "hello"), ("zwölf", "twelve")]


def test_tsv_without_final_newline_and_with_inner_spaces(tmp_path):
    f = _write(tmp_path / "a.tsv", b"a b\tc d\nx\ty")
    assert load_tsv(f) == [("a b", "c d"), ("x", "y")]


def test_parallel_files_load(tmp_path):
    src = _write(tmp_path / "x.de", b"eins\nzwei\n")
    tgt = _write(tmp_path / "x.en", b"one\ntwo\n")
    assert load_parallel(src, tgt) == [("eins", "one"), ("zwei", "two")]


def _error(fn, *args) -> str:
    with pytest.raises(DataError) as err:
        fn(*args)
    assert isinstance(err.value, AttnkitError)
    return str(err.value)


def test_missing_file(tmp_path):
    msg = _error(load_tsv, tmp_path / "nope.tsv")
    assert "nope.tsv" in msg and "not found" in msg


def test_undecodable_bytes_name_the_line(tmp_path):
    f = _write(tmp_path / "bad.tsv", b"a\tb\nc\td\ne\xff\tf\n")
    msg = _error(load_tsv, f)
    assert f"{f}:3:" in msg and "UTF-8" in msg and "0xff" in msg


@pytest.mark.parametrize("line, found", [(b"no tab here", "found 0"), (b"a\tb\tc", "found 2")])
def test_tsv_line_needs_exactly_one_tab(tmp_path, line, found):
    f = _write(tmp_path / "t.tsv", b"a\tb\n" + line + b"\n")
    msg = _error(load_tsv, f)
    assert f"{f}:2:" in msg and "one tab" in msg and found in msg


@pytest.mark.parametrize(
    "data, line, what",
    [
        (b"a\tb\n\nc\td\n", 2, "empty line"),
        (b"a\tb\n\tx\n", 2, "empty source"),
        (b"a\tb\nc\td\ny\t\n", 3, "empty target"),
        (b"a\tb\r\n\r\n", 2, "empty line"),
    ],
)
def test_empty_lines_and_sides(tmp_path, data, line, what):
    f = _write(tmp_path / "e.tsv", data)
    msg = _error(load_tsv, f)
    assert f"{f}:{line}:" in msg and what in msg


def test_empty_line_in_parallel_file(tmp_path):
    src = _write(tmp_path / "s.txt", b"a\n\nc\n")
    tgt = _write(tmp_path / "t.txt", b"x\ny\nz\n")
    msg = _error(load_parallel, src, tgt)
    assert f"{src}:2:" in msg and "empty line" in msg


def test_different_line_counts_name_both_files_and_counts(tmp_path):
    src = _write(tmp_path / "s.txt", b"a\nb\nc\n")
    tgt = _write(tmp_path / "t.txt", b"x\ny\n")
    msg = _error(load_parallel, src, tgt)
    assert str(src) in msg and str(tgt) in msg and "3" in msg and "2" in msg


def test_empty_file(tmp_path):
    f = _write(tmp_path / "empty.tsv", b"")
    assert "empty" in _error(load_tsv, f)


def test_load_splits_mixes_tsv_and_file_pairs(tmp_path):
    train = _write(tmp_path / "train.tsv", b"a\t1\nb\t2\n")
    dev_src = _write(tmp_path / "dev.src", b"c\n")
    dev_tgt = _write(tmp_path / "dev.tgt", b"3\n")
    test = _write(tmp_path / "test.tsv", b"d\t4\n")
    splits = load_splits(train, (dev_src, dev_tgt), str(test))
    assert splits == Splits(train=[("a", "1"), ("b", "2")], dev=[("c", "3")], test=[("d", "4")])


def test_load_splits_warns_about_test_sources_seen_in_train(tmp_path):
    train = _write(tmp_path / "train.tsv", b"a\t1\nb\t2\n")
    dev = _write(tmp_path / "dev.tsv", b"c\t3\n")
    test = _write(tmp_path / "test.tsv", b"a\t1\n")
    with pytest.warns(UserWarning, match="1 of 1 test sources"):
        load_splits(train, dev, test)


def test_a_fifo_as_a_data_file_is_refused_unread(tmp_path):
    """A FIFO named as a data file is one line naming it, not a read that waits for a writer."""
    import os

    os.mkfifo(tmp_path / "train.tsv")
    with pytest.raises(DataError, match="train.tsv.*not a regular file"):
        load_tsv(tmp_path / "train.tsv")
