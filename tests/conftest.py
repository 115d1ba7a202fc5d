"""Shared test helpers.

Real-data tests read ``$ATTNKIT_DATA_DIR/<name>``. When the variable is unset and the offline
copies in ``../shared/data`` next to the repository exist, it is set to them here, for the whole
session (and the subprocesses it starts): the shipped configs (``data.directory: null``) then read
those copies, never the user cache or the network. Tests skip, naming the missing directory, where
a data set is absent.
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
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
if not os.environ.get("ATTNKIT_DATA_DIR", "").strip() and SHARED_DATA.is_dir():
    os.environ["ATTNKIT_DATA_DIR"] = str(SHARED_DATA)


def shared_data_dir(name: str) -> Path:
    """``$ATTNKIT_DATA_DIR/<name>``; skips the test when absent."""
    root = os.environ.get("ATTNKIT_DATA_DIR", "").strip()
    if not root:
        pytest.skip(f"no data: set ATTNKIT_DATA_DIR to a directory holding {name}/")
    path = Path(root).expanduser() / name
    if not path.is_dir():
        pytest.skip(f"data directory {path} is missing (from ATTNKIT_DATA_DIR)")
    return path


#: the tests the quick tier (``pytest -m "not slow"``) leaves out besides those marked slow in
#: their files: one node id, or a prefix of ids (a file, a test without its parameters), a line;
#: benchmarks/test_tiers.py chooses them from a measured run's durations
SLOW_TESTS = Path(__file__).with_name("slow_tests.txt")


def _listed(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    return any(
        nodeid == p
        or nodeid.startswith((p + "::", p + "["))
        or (p.endswith("/") and nodeid.startswith(p))
        for p in prefixes
    )


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` the tests :data:`SLOW_TESTS` lists (one central list, not a mark in every
    file)."""
    if not SLOW_TESTS.is_file():
        return
    lines = SLOW_TESTS.read_text(encoding="utf-8").splitlines()
    prefixes = tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    for item in items:
        if _listed(item.nodeid, prefixes):
            item.add_marker(pytest.mark.slow)


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


def write_babi_task(directory: Path, questions: int, seed: int = 0, task: int = 1) -> Path:
    """bAbI files of our own (the format of task 1, "single supporting fact": people go to
    places, "Where is X?"; each person moves once a story), ``questions`` each for train and
    test, written under the names of task ``task`` in ``directory/en``; returns ``directory``."""
    import random

    from attnkit.data.babi import TASKS

    people = ["mary", "john", "sandra", "daniel", "fred", "julie"]
    places = ["kitchen", "garden", "office", "hallway", "bathroom", "bedroom"]
    verbs = ["went to", "moved to", "journeyed to", "travelled to"]
    (directory / "en").mkdir(parents=True, exist_ok=True)
    for split, offset in (("train", 0), ("test", 1)):
        rng = random.Random(seed * 2 + offset)
        lines, asked = [], 0
        while asked < questions:
            where, line_id = {}, 0
            for who in rng.sample(people, rng.randint(2, 4)):
                line_id += 1
                place = rng.choice(places)
                lines.append(f"{line_id} {who.title()} {rng.choice(verbs)} the {place}.")
                where[who] = (place, line_id)
            for who in rng.sample(sorted(where), min(2, questions - asked)):
                line_id += 1
                lines.append(
                    f"{line_id} Where is {who.title()}? \t{where[who][0]}\t{where[who][1]}"
                )
                asked += 1
        name = f"qa{task}_{TASKS[task]}_{split}.txt"
        (directory / "en" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


@pytest.fixture
def babi_dir(tmp_path):
    """A directory of our own task-1 bAbI files: 200 training and 200 test questions."""
    return write_babi_task(tmp_path / "babi", 200)


@pytest.fixture
def hf_offline(monkeypatch):
    """The Hugging Face hub offline for the test: a model not on disk is an error, never a
    download (``pytestmark = pytest.mark.usefixtures("hf_offline")`` for a whole module)."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    """The helper ``tiny_hf(kind) -> Path``: the directory of a tiny Hugging Face model of that
    kind (:func:`attnkit.families.hf.tiny.save_tiny`: built from a config, nothing downloaded),
    each built once for the test module."""
    from attnkit.families.hf.tiny import save_tiny

    made = {}

    def get(kind: str):
        if kind not in made:
            made[kind] = save_tiny(kind, tmp_path_factory.mktemp(kind))
        return made[kind]

    return get
