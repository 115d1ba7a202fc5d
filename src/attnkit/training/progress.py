"""Where a run's lines and progress bar go: stderr, the same for every family.

* On a terminal (stderr a tty) with ``train.progress``: a bar for each epoch (batches, loss,
  accuracy, items/s, rate) that disappears when the epoch ends; the run's lines print above it.
* In a Jupyter notebook with ``train.progress``: one line that updates in place (plain text,
  ``\\r``: no widgets, so no ``TqdmWarning`` where ipywidgets is absent); each dev evaluation's
  line is shown on it rather than printed, so a run of a thousand epochs prints a handful of
  lines (its first lines, warnings and its last line), all kept in ``RUN/train.log``.
* Elsewhere (a log file, a pipe) or without ``train.progress``: the lines and no bar.

``train.verbose`` False prints nothing but :meth:`Progress.notice` lines (what a resumed run
changes); the run's files still get every line.
"""

from __future__ import annotations

import sys
from typing import IO

from tqdm import tqdm


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell), where stderr is not a terminal but
    ``\\r`` rewrites the output's last line."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class Progress:
    """A run's output: :meth:`line` (always printed), :meth:`status` (an evaluation's line:
    printed, or on the bar in a notebook) and the epoch's bar (:meth:`begin`, :meth:`advance`,
    :meth:`end`)."""

    def __init__(self, verbose: bool = True, bar: bool = True, stream: IO[str] | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.verbose = verbose
        terminal = _isatty(self.stream)
        self.notebook = not terminal and in_notebook()
        self.show_bar = verbose and bar and (terminal or self.notebook)
        self._bar: tqdm | None = None
        self._latest = ""  # a notebook's latest evaluation line, shown on its bar

    def line(self, text: str) -> None:
        """Print ``text`` above any bar (with ``verbose``)."""
        if self.verbose:
            self.notice(text)

    def notice(self, text: str) -> None:
        """Print ``text`` above any bar, also without ``verbose``."""
        tqdm.write(text, file=self.stream)
        self.stream.flush()

    def status(self, text: str) -> None:
        """An evaluation's line: printed, or in a notebook with a bar, shown on it."""
        if self.show_bar and self.notebook:
            self._latest = text
            if self._bar is not None:
                self._bar.set_description_str(text, refresh=True)
        else:
            self.line(text)

    def begin(self, epoch: int, planned: int, batches: int, done: int) -> None:
        """The bar of (1-based) ``epoch`` of ``planned``: ``batches`` in all, ``done`` already."""
        self.end()
        if not self.show_bar:
            return
        self._bar = tqdm(
            total=batches,
            initial=done,
            unit="batch",
            desc=self._latest or f"epoch {epoch}/{planned}",
            leave=False,
            file=self.stream,
            dynamic_ncols=not self.notebook,
            mininterval=0.2,
        )

    def advance(self, postfix: dict[str, str] | None = None) -> None:
        """One batch done; ``postfix``: the figures to show beside the bar (None: as they were)."""
        if self._bar is None:
            return
        self._bar.update(1)
        if postfix is not None:  # every few updates: drawn at once
            self._bar.set_postfix(postfix)

    def end(self) -> None:
        """Close the epoch's bar (a terminal's disappears; a notebook's is rewritten next)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a file
        return False
