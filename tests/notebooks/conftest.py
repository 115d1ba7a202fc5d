"""Executing the lessons of ``notebooks/``: each jupytext percent-format ``.py`` file is read
with jupytext and run by nbclient in a real IPython kernel, in quick mode (``QUICK=1`` unless the
environment says otherwise), in a scratch directory (what a lesson trains lands there). An
executed lesson is kept for the session, so the browser test reuses it.

Needs jupytext, nbclient, nbformat, nbconvert and ipykernel (the test extras); skips, saying so,
without them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest


class Lessons:
    """Executes each lesson once per session: ``get(path) -> (notebook, seconds)``."""

    def __init__(self, root: Path):
        self.root = root
        self.done: dict[Path, tuple] = {}

    def get(self, path: Path):
        if path not in self.done:
            self.done[path] = self._execute(path)
        return self.done[path]

    def _execute(self, path: Path):
        jupytext = pytest.importorskip("jupytext", reason="pip install jupytext (the test extras)")
        nbclient = pytest.importorskip("nbclient", reason="pip install nbclient (the test extras)")
        pytest.importorskip("ipykernel", reason="pip install ipykernel (the test extras)")
        nb = jupytext.read(path)
        cwd = self.root / path.stem
        cwd.mkdir(parents=True, exist_ok=True)
        saved = {k: os.environ.get(k) for k in ("QUICK", "MPLBACKEND", "OMP_NUM_THREADS")}
        os.environ.setdefault("QUICK", "1")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.pop("MPLBACKEND", None)  # the kernel's inline backend draws the figures
        try:
            start = time.perf_counter()
            client = nbclient.NotebookClient(nb, timeout=1800, kernel_name="python3")
            client.execute(cwd=str(cwd))
            return nb, time.perf_counter() - start
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@pytest.fixture(scope="session")
def lessons(tmp_path_factory) -> Lessons:
    return Lessons(tmp_path_factory.mktemp("lessons"))
