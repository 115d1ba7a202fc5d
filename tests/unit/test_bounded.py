"""Every reader is bounded: size and line length checked as the bytes arrive, before decoding
or tokenizing; regular files above the size refused from their size, devices and FIFOs read up to
the limit; one line naming the file, the line and the limit."""

from __future__ import annotations

import io
import os
import threading
import time

import pytest

from attnkit.data.bounded import (
    ReadLimits,
    iter_raw_lines,
    raw_lines,
    read_limits,
    read_raw_lines,
)
from attnkit.data.tasks.parallel import load_parallel, load_tsv
from attnkit.errors import ConfigError, DataError

SMALL = ReadLimits(max_bytes=1000, max_line=50)


def test_lines_as_before_within_the_limits(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"one\r\ntwo\n\nthree")
    assert read_raw_lines(path, SMALL) == [b"one\r", b"two", b"", b"three"]
    path.write_bytes(b"x" * 50 + b"\r\n" + b"y" * 50 + b"\n")  # exactly at the line limit
    assert read_raw_lines(path, SMALL) == [b"x" * 50 + b"\r", b"y" * 50]


@pytest.mark.parametrize("line", [b"x" * 51, b"x" * 51 + b"\n", b"x" * 900])
def test_a_line_above_the_limit_names_file_line_and_limit(tmp_path, line):
    path = tmp_path / "a.txt"
    path.write_bytes(b"ok\n" + line)
    with pytest.raises(DataError) as err:
        read_raw_lines(path, SMALL)
    assert str(err.value) == (
        f"{path}:2: line longer than 50 bytes, the limit (ATTNKIT_MAX_LINE_KB raises it)"
    )


def test_a_regular_file_above_the_size_is_refused_from_its_size(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"a\n" * 600)
    with pytest.raises(DataError, match=r"big.txt: 1,200 bytes, above the limit of 1,000"):
        next(raw_lines(path, SMALL))  # refused before the first line is read


def test_a_stream_is_read_up_to_the_limit_and_refused_there():
    class Endless(io.RawIOBase):
        served = 0

        def readable(self):
            return True

        def readinto(self, buffer):
            buffer[: len(buffer)] = b"a\n" * (len(buffer) // 2) + b"a" * (len(buffer) % 2)
            self.served += len(buffer)
            return len(buffer)

    raw = Endless()
    with pytest.raises(DataError, match="<stdin>: more than bytes|<stdin>: more than"):
        list(iter_raw_lines(io.BufferedReader(raw, 64), "<stdin>", SMALL))
    assert raw.served < 2000


def test_dev_zero_and_urandom_are_refused_at_once(tmp_path):
    limits = ReadLimits(max_bytes=1 << 20, max_line=1 << 10)
    t0 = time.monotonic()
    with pytest.raises(DataError, match="/dev/zero:1: line longer than 1,024 bytes"):
        read_raw_lines("/dev/zero", limits)
    with pytest.raises(DataError, match="/dev/urandom:"):
        read_raw_lines("/dev/urandom", limits)
    assert time.monotonic() - t0 < 10


def test_a_fifo_is_read_with_the_same_limits(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as f:
            try:
                for _ in range(100):
                    f.write(b"abc\n" * 100)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with pytest.raises(DataError, match="pipe: more than bytes|pipe: more than"):
        read_raw_lines(fifo, SMALL)
    writer.join(timeout=10)


def test_training_and_scoring_files_stop_at_the_first_bad_line(tmp_path, monkeypatch):
    """load_tsv / load_parallel read through the bounds (defaults from the environment), and
    stop at the first line that is not UTF-8 without reading the rest."""
    monkeypatch.setenv("ATTNKIT_MAX_LINE_KB", "1")
    long = tmp_path / "long.tsv"
    long.write_bytes(b"a\tb\n" + b"c" * 2000 + b"\td\n")
    with pytest.raises(DataError, match=r"long.tsv:2: line longer than 1,024 bytes"):
        load_tsv(long)
    # a parallel pair is opened only as regular files: a device (or a FIFO) never blocks it
    with pytest.raises(DataError, match="/dev/zero: is a FIFO, device or socket"):
        load_parallel("/dev/zero", "/dev/zero")
    with pytest.raises(DataError, match="/dev/urandom: is a FIFO, device or socket"):
        load_tsv("/dev/urandom")
    bad = tmp_path / "bad.tsv"  # not UTF-8 on its first line, then many good ones
    bad.write_bytes(b"\xff\xfe\tx\n" + b"a\tb\n" * 100_000)
    with pytest.raises(DataError, match="bad.tsv:1: "):
        load_tsv(bad)


def test_limits_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("ATTNKIT_MAX_INPUT_MB", "3")
    monkeypatch.setenv("ATTNKIT_MAX_LINE_KB", "2")
    assert read_limits() == ReadLimits(3 << 20, 2 << 10)
    monkeypatch.setenv("ATTNKIT_MAX_LINE_KB", "-1")
    with pytest.raises(ConfigError, match="ATTNKIT_MAX_LINE_KB='-1': expected a whole number"):
        read_limits()


def test_translate_refuses_an_endless_stdin_line(monkeypatch, capsys):
    from attnkit.cli import main

    class Stdin:
        buffer = io.BytesIO(b"x" * 5000)

        def isatty(self):
            return False

    monkeypatch.setenv("ATTNKIT_MAX_LINE_KB", "1")
    monkeypatch.setattr("sys.stdin", Stdin())
    assert main(["translate", "--model", "nowhere", "-"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "attnkit: error: <stdin>:1: line longer than 1,024 bytes, the limit "
        "(ATTNKIT_MAX_LINE_KB raises it)"
    )
