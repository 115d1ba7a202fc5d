"""bAbI scores (evaluation/babi.py) and the hop-by-hop pictures (viz/memory.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnkit.evaluation.babi import summary_table, support_hits, task_scores
from attnkit.viz.memory import hops_record, save_hops


def test_support_attention_counts_the_top_memory_of_each_hop():
    attention = torch.tensor(
        [
            [[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]],  # hop 1 on memory 0, hop 2 on memory 2
            [[0.1, 0.6, 0.3], [0.2, 0.5, 0.3]],  # both hops on memory 1
        ]
    )
    supporting = torch.tensor([[True, False, False], [False, True, False]])
    assert support_hits(attention, supporting).tolist() == [[True, False], [True, True]]
    # question 0 holds 2 facts: its hop 2's weight on the empty slot 2 (a model that weighs
    # empty slots) does not count; its top fact is memory 0 or 1 (0.1 each: the first)
    counts = torch.tensor([2, 3])
    assert support_hits(attention, supporting, counts).tolist() == [[True, True], [True, True]]


def test_task_scores_mean_error_and_failed_tasks():
    tasks = [1, 1, 1, 1, 2, 2]
    right = torch.tensor([True, True, True, True, True, False])
    hits = torch.tensor([[True], [True], [False], [True], [True], [True]])
    has_support = torch.tensor([True, True, True, False, True, True])
    s = task_scores(tasks, right, hits, has_support)
    assert s["tasks"]["1"]["error_pct"] == 0.0 and s["tasks"]["2"]["error_pct"] == 50.0
    # question 4 has no supporting fact in memory: left out of the share
    assert s["tasks"]["1"]["support_attention_pct"] == [pytest.approx(66.67)]
    assert s["mean_error_pct"] == 25.0 and s["failed_tasks"] == 1 and s["failed"] == ["2"]
    assert "failed tasks (error > 5%): 1" in summary_table(s)


def test_the_hops_map_has_sentences_as_rows_and_gold_supporting_facts(tmp_path):
    weights = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])  # (K=3 hops, M=2 sentences)
    r = hops_record(["Mary went home.", "John left."], "Where is Mary?", "home", weights, [0])
    assert r.weights.shape == (2, 3) and r.source_tokens == ["hop 1", "hop 2", "hop 3"]
    assert r.output_tokens == ["Mary went home.", "John left."]
    assert r.gold == [(0, 0), (0, 1), (0, 2)] and r.weights[1, 1] == pytest.approx(0.8)
    path = save_hops(r, tmp_path / "hops.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="png"):
        save_hops(r, tmp_path / "hops.gif")
