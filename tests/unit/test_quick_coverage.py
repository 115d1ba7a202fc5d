"""Quick checks of modules whose own tests train or start servers (and so run in the full suite
only): the quick tier (``pytest -m "not slow"``) still runs a test of each."""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_scripts import load_script

from attnkit.serve.server import is_local
from attnkit.training.averaging import CheckpointAverager


@pytest.mark.parametrize(
    "host, local",
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True), ("0.0.0.0", False)],
)
def test_only_loopback_hosts_are_local(host, local):
    assert is_local(host) is local


def test_the_averager_keeps_the_n_best_evaluations_best_first_later_on_a_tie(tmp_path):
    history = [{"step": s, "dev": {"bleu": b}} for s, b in [(1, 10), (2, 30), (3, 20), (4, 30)]]
    higher = CheckpointAverager(tmp_path, 3, "bleu", True, print)
    assert higher.top_steps(history) == [4, 2, 3]
    lower = CheckpointAverager(tmp_path, 2, "bleu", False, print)
    assert lower.top_steps(history) == [1, 3]
    assert higher.top == Path(tmp_path) / "top" and higher.averaged == Path(tmp_path) / "averaged"


def test_the_tier_script_lists_the_slowest_but_keeps_a_test_of_every_file():
    tiers = load_script("benchmarks/test_tiers.py")
    times = {"a.py::x": 50.0, "a.py::y": 1.0, "b.py::z": 40.0, "c.py::w": 30.0, "c.py::v": 5.0}
    assert tiers.choose(times, budget=80) == ["a.py::x"]  # 126 - 50 = 76 fit
    assert tiers.choose(times, budget=10) == ["a.py::x", "c.py::w"]  # b's only test stays
    assert (
        tiers.node_id("tests.unit.test_zoo", "test_x[a.b]") == "tests/unit/test_zoo.py::test_x[a.b]"
    )
