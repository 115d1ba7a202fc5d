"""Pointer networks: the tasks' exact solvers against brute force, the one-line errors, the mask,
greedy and beam decoding, the scores (data/tasks/pointer.py, models/pointer.py,
decoding/pointer.py, families/pointer/evaluate.py, viz/pointer.py)."""

import itertools

import numpy as np
import pytest
import torch

from attnkit.data.tasks.pointer import (
    TSP_MAX_POINTS,
    PointerData,
    brute_force_tour,
    canonical_tour,
    check_points,
    convex_hull,
    held_karp,
    make_split,
    polygon_area,
    sort_order,
    targets_of,
    tour_length,
)
from attnkit.decoding.pointer import beam_pointer, greedy_pointer
from attnkit.errors import ConfigError, InputError
from attnkit.families.pointer.evaluate import same_answer, score_outputs, simple_polygon
from attnkit.models.pointer import PointerConfig, PointerNet, allowed_slots


def _brute_force_hull(points: np.ndarray) -> list[int]:
    """Hull vertices by definition: i -> j is a counter-clockwise hull edge when every other
    point lies strictly left of it; the edges chained from the lowest index."""
    n = len(points)
    nxt = {}
    for i, j in itertools.permutations(range(n), 2):
        a, b = points[i], points[j]
        left = [
            (b[0] - a[0]) * (points[k][1] - a[1]) - (b[1] - a[1]) * (points[k][0] - a[0]) > 0
            for k in range(n)
            if k not in (i, j)
        ]
        if all(left):
            nxt[i] = j
    start = min(nxt)
    hull = [start]
    while nxt[hull[-1]] != start:
        hull.append(nxt[hull[-1]])
    return hull


@pytest.mark.parametrize("n", [3, 4, 6, 9])
def test_convex_hull_equals_brute_force(n):
    rng = np.random.default_rng(n)
    for _ in range(30):
        points = rng.random((n, 2))
        assert convex_hull(points) == _brute_force_hull(points)


def test_convex_hull_leaves_out_collinear_and_interior_points():
    square = np.array([[0, 0], [0.5, 0], [1, 0], [1, 1], [0.5, 0.5], [0, 1]], dtype=float)
    assert convex_hull(square) == [0, 2, 3, 5]
    assert polygon_area(square, convex_hull(square)) == pytest.approx(1.0)


@pytest.mark.parametrize("n", [4, 5, 6, 7])
def test_held_karp_equals_brute_force_and_is_canonical(n):
    rng = np.random.default_rng(10 + n)
    batch = rng.random((12, n, 2))
    for points, tour in zip(batch, held_karp(batch), strict=True):
        best = brute_force_tour(points)
        assert tour_length(points, tour) == pytest.approx(tour_length(points, best))
        assert tour[0] == 0 and tour[1] < tour[-1] and sorted(tour) == list(range(n))


def test_canonical_tour_is_the_same_cycle_from_zero_either_way():
    assert canonical_tour([2, 0, 3, 1]) == [0, 2, 1, 3]  # 0-3-1-2 backwards
    assert canonical_tour([3, 2, 1, 0]) == [0, 1, 2, 3]
    assert same_answer("tsp", [2, 1, 0, 3], [0, 3, 2, 1])
    assert not same_answer("tsp", [0, 2, 1, 3], [0, 1, 2, 3])
    assert same_answer("hull", [3, 5, 1], [1, 3, 5]) and not same_answer(
        "hull", [1, 5, 3], [1, 3, 5]
    )


def test_duplicate_points_and_a_tsp_beyond_the_solver_are_one_line_errors():
    with pytest.raises(InputError, match=r"duplicate point \[0.5, 0.5\]"):
        check_points([[0.1, 0.2], [0.5, 0.5], [0.9, 0.1], [0.5, 0.5]])
    with pytest.raises(InputError, match="finite"):
        check_points([[0.1, float("nan")]])
    with pytest.raises(ConfigError, match=f"beyond the exact TSP solver.*at most {TSP_MAX_POINTS}"):
        held_karp(np.random.default_rng(0).random((1, TSP_MAX_POINTS + 1, 2)))
    cfg = PointerData(task="tsp", points=TSP_MAX_POINTS + 1)
    with pytest.raises(ConfigError, match="points"):
        cfg.validate("data")


def test_splits_are_solved_disjoint_draws_with_end_terminated_targets():
    cfg = PointerData(task="sort", points=6, train_size=20, dev_size=5, test_size=5, seed=3)
    train, dev = make_split(cfg, "train"), make_split(cfg, "dev")
    assert train.inputs.shape == (20, 6, 1) and not np.isin(dev.inputs, train.inputs).any()
    for x, s, t in zip(train.inputs, train.solutions, train.targets, strict=True):
        assert s == sort_order(x) and np.all(np.diff(x[s, 0]) >= 0)
        assert t.tolist() == [i + 1 for i in s] + [0]
    assert targets_of([[2, 0], [1]]).tolist() == [[3, 1, 0], [2, 0, -1]]
    again = make_split(cfg, "train")
    assert np.array_equal(again.inputs, train.inputs)


def test_the_mask_forbids_chosen_inputs_and_places_the_end():
    chosen = torch.tensor([[False, True, False, False], [False, True, True, True]])
    perm = allowed_slots(chosen, 1, permutation=True, min_points=3)
    assert perm.tolist() == [[False, False, True, True], [True, False, False, False]]
    hull = allowed_slots(chosen, 1, permutation=False, min_points=3)
    assert hull[0].tolist() == [False, False, True, True]  # end only after 3 points
    assert allowed_slots(chosen, 3, permutation=False, min_points=3)[0, 0]


@pytest.mark.parametrize("task", ["sort", "hull", "tsp"])
def test_decoding_outputs_what_the_mask_allows_and_beam_never_scores_below_greedy(task):
    torch.manual_seed(0)
    cfg = PointerData(task=task, points=6, train_size=1, dev_size=8, test_size=1)
    split = make_split(cfg, "dev")
    model = PointerNet(PointerConfig(hidden=16, attention_dim=8), cfg.dims, cfg.permutation).eval()
    inputs = torch.as_tensor(split.inputs)
    greedy, beam = greedy_pointer(model, inputs), beam_pointer(model, inputs, 4)
    for g, b in zip(greedy, beam, strict=True):
        for found in (g, b):
            assert len(set(found.order)) == len(found.order)
            if cfg.permutation:
                assert sorted(found.order) == list(range(6))
            else:
                assert len(found.order) >= 3
            assert found.attention.shape == (len(found.order) + 1, 7)
            np.testing.assert_allclose(found.attention.sum(1), 1.0, rtol=1e-5)
            assert (found.attention.argmax(1)[:-1] == np.asarray(found.order) + 1).all()
        assert b.log_prob >= g.log_prob - 1e-5


def test_teacher_forcing_scores_equal_the_decoding_steps():
    """The log-probabilities of teacher forcing are those decoding sees on the same choices."""
    torch.manual_seed(1)
    model = PointerNet(PointerConfig(hidden=12, attention_dim=8), 2, True).eval()
    inputs = torch.rand(3, 5, 2)
    with torch.no_grad():
        found = greedy_pointer(model, inputs)
        targets = torch.tensor([[i + 1 for i in f.order] + [0] for f in found])
        log_probs = model(inputs, targets)
    total = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1).sum(1)
    torch.testing.assert_close(total, torch.tensor([f.log_prob for f in found]), atol=1e-5, rtol=0)


def test_scores_of_each_task():
    cfg = PointerData(task="tsp", points=5, train_size=1, dev_size=4, test_size=1)
    split = make_split(cfg, "dev")
    perfect = score_outputs("tsp", split, [s[::-1] for s in split.solutions])
    assert perfect["exact_match"] == 100.0 and perfect["optimality_gap_pct"] == 0.0
    worse = score_outputs("tsp", split, [[0, 2, 1, 3, 4]] * 4)
    assert worse["tour_length"] >= worse["optimal_length"] and worse["optimality_gap_pct"] >= 0
    hull = make_split(PointerData(task="hull", points=8, dev_size=6), "dev")
    scores = score_outputs("hull", hull, hull.solutions)
    assert scores["area_coverage"] == 100.0 and scores["point_recall"] == 100.0
    crossed = np.array([[0, 0], [1, 1], [1, 0], [0, 1]], dtype=float)
    assert not simple_polygon(crossed, [0, 1, 2, 3]) and simple_polygon(crossed, [0, 2, 1, 3])


def test_plot_solution_draws_points_beside_the_heatmap(tmp_path):
    from attnkit.viz.pointer import plot_solution

    points = np.random.default_rng(0).random((5, 2))
    attention = np.eye(6)[[2, 4, 1, 0]]
    fig = plot_solution(points, [1, 3, 0], attention, "hull", tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0
    assert [ax.get_title() for ax in fig.axes[:2]] == ["convex hull chosen", "pointer attention"]


def test_instances_and_a_checkpoint_data_section_are_capped_before_anything_runs(tmp_path):
    import time

    from attnkit import checkpoint as ckpt
    from attnkit.data.tasks.pointer import MAX_POINTS
    from attnkit.errors import ConfigError, InputError
    from attnkit.families.pointer.bundle import load_pointer

    many = [[float(i), 0.5] for i in range(1_000_000)]
    start = time.process_time()  # this process's CPU time: other jobs on the machine do not count
    with pytest.raises(InputError, match=f"1,000,000 points, above the cap of {MAX_POINTS:,}"):
        check_points(many)
    assert time.process_time() - start < 1
    # a checkpoint whose data section asks for 10^8 points per instance: refused at load
    ckpt.write_checkpoint(tmp_path, "pointer", {}, {"data": {"task": "sort", "points": 10**8}})
    with pytest.raises(ConfigError, match=r"data\.points: 100,000,000 is above the cap of 1,000"):
        load_pointer(tmp_path)
    cfg = {"data": {"task": "sort", "points": 1_000, "train_size": 1_000_000}}
    ckpt.write_checkpoint(tmp_path, "pointer", {}, cfg)
    with pytest.raises(ConfigError, match=r"data\.train_size: 1,000,000 instances of 1000"):
        load_pointer(tmp_path)
