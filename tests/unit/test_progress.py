"""Where a run's lines and bar go: a bar on a terminal, an updating line in a notebook, plain
lines in a file or a pipe, nothing without ``train.verbose``."""

from __future__ import annotations

import io
import re
import sys
import types

import pytest

from attnkit.training import progress as progress_module
from attnkit.training.progress import Progress, in_notebook


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _epoch(progress: Progress) -> None:
    progress.begin(1, 2, 3, 0)
    for _ in range(3):
        progress.advance({"loss": "0.5"})
    progress.end()


@pytest.mark.parametrize(
    "stream, bar, shown",
    [(Terminal(), True, True), (io.StringIO(), True, False), (Terminal(), False, False)],
    ids=["terminal", "file-or-pipe", "progress-off"],
)
def test_a_bar_is_drawn_only_on_a_terminal_when_asked(stream, bar, shown):
    progress = Progress(verbose=True, bar=bar, stream=stream)
    _epoch(progress)
    assert ("epoch 1/2" in stream.getvalue()) is shown
    progress.status("update 3 (epoch 1/2): dev loss 0.5")
    assert stream.getvalue().endswith("update 3 (epoch 1/2): dev loss 0.5\n")  # a line, always


def test_verbose_off_prints_nothing_at_all():
    stream = Terminal()
    progress = Progress(verbose=False, bar=True, stream=stream)
    _epoch(progress)
    progress.line("a line")
    progress.status("an evaluation")
    assert stream.getvalue() == ""


class _Shell:
    """Stands for IPython's kernel shell (its class name is what tells a notebook)."""


_Shell.__name__ = "ZMQInteractiveShell"


@pytest.fixture
def notebook(monkeypatch):
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: _Shell()
    monkeypatch.setitem(sys.modules, "IPython", fake)


def test_a_notebook_gets_one_updating_line_with_the_evaluations_on_it(notebook):
    assert in_notebook()
    stream = io.StringIO()  # a kernel's stderr is no terminal
    progress = Progress(verbose=True, bar=True, stream=stream)
    assert progress.show_bar and progress.notebook
    progress.begin(1, 5, 4, 0)
    progress.advance({"loss": "0.9"})
    progress.status("update 1 (epoch 1/5): dev accuracy 0.5 (best)")
    progress.advance()
    progress.end()
    progress.line("done (epochs): best dev accuracy 0.5")
    out = stream.getvalue()
    assert "\r" in out  # the line is rewritten in place
    assert "update 1 (epoch 1/5): dev accuracy 0.5 (best)" in out  # on the bar, not a new line
    assert "(best)\n" not in out  # never a line of its own
    shown = [part for part in re.split(r"[\r\n]", out) if part.strip()]
    assert shown[-1] == "done (epochs): best dev accuracy 0.5"


def test_outside_a_notebook_there_is_no_kernel(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not progress_module.in_notebook()
