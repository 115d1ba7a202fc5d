"""Shared test helpers.

Real-data tests read the offline copies in ``../shared/data/<name>`` next to
the repository (or ``$ATTNKIT_DATA_DIR/<name>`` when that variable is set) and
skip, naming the missing directory, where they are absent.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# torch.compile's kernel cache (/tmp/torchinductor_<user>) is shared by every run on a machine,
# and its keys leave out the CPU kernel set: after a run with ATEN_CPU_CAPABILITY=avx2, a default
# (AVX-512) run loaded kernels built for the other one and computed garbage, or corrupted the heap
# (seen with torch 2.13). Each test session compiles into a cache of its own.
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    _INDUCTOR_CACHE = tempfile.mkdtemp(prefix="attnkit-tests-inductor-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = _INDUCTOR_CACHE
    atexit.register(shutil.rmtree, _INDUCTOR_CACHE, ignore_errors=True)

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir(name: str) -> Path:
    """``$ATTNKIT_DATA_DIR/<name>`` if set, else ``<repo>/../shared/data/<name>``; skips the test
    when absent."""
    root = os.environ.get("ATTNKIT_DATA_DIR")
    base = Path(root).expanduser() if root else REPO_ROOT.parent / "shared" / "data"
    path = base / name
    if not path.is_dir():
        hint = (
            " (from ATTNKIT_DATA_DIR)"
            if root
            else " (set ATTNKIT_DATA_DIR to a directory holding it)"
        )
        pytest.skip(f"data directory {path} is missing{hint}")
    return path


@pytest.fixture
def shared_data():
    """The helper ``shared_data(name) -> Path``; the test skips when that data set is absent."""
    return shared_data_dir


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """The tests' models are tiny: one thread is fastest for them, and steady on a busy CPU."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
