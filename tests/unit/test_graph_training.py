"""The graph family end to end on small generated graphs: configs, training on the shared loop,
checkpoints, the Python API (evaluate, explain_node, pictures) and the commands train ->
evaluate -> plot -> explain."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import attnkit
from attnkit.errors import ConfigError, InputError
from attnkit.families.graph.cli import table
from attnkit.families.graph.config import parse_config
from attnkit.families.graph.model import NodeExplanation


def _communities(directory, seed: int, per_class: int = 30, classes: int = 3):
    """Three communities, dense inside and sparse across; each node's features name its class
    only half the time (the rest: a random class), so a node alone is often wrong and its
    neighbours settle it. 10 training nodes per class, 5 dev, the rest test."""
    rng = np.random.default_rng(seed)
    n = per_class * classes
    label = np.repeat(np.arange(classes), per_class)
    shown = np.where(rng.random(n) < 0.5, label, rng.integers(0, classes, n))
    features = np.eye(classes)[shown] + 0.1 * rng.random((n, classes))
    split = np.tile(["train"] * 10 + ["dev"] * 5 + ["test"] * (per_class - 15), classes)
    lines = [
        f"n{i}\tc{label[i]}\t{split[i]}\t{' '.join(f'{v:.3f}' for v in features[i])}"
        for i in range(n)
    ]
    (directory / "nodes.tsv").write_text("\n".join(lines) + "\n")
    same = label[:, None] == label[None, :]
    linked = np.triu(rng.random((n, n)) < np.where(same, 0.2, 0.01), 1)
    edges = [f"n{i}\tn{j}" for i, j in zip(*np.nonzero(linked), strict=True)]
    (directory / "edges.tsv").write_text("\n".join(edges) + "\n")


def _config(directory, **model) -> dict:
    return {
        "family": "graph",
        "data": {
            "name": "edge_list",
            "nodes": str(directory / "nodes.tsv"),
            "edges": str(directory / "edges.tsv"),
            "normalize": False,
        },
        "model": {"hidden": 4, "heads": 2, "dropout": 0.0, "attention_dropout": 0.0, **model},
        "train": {
            "epochs": 60,
            "lr": 0.02,
            "patience": None,
            "threads": 1,
            "verbose": False,
            "tensorboard": False,
        },
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gat_learns_communities_from_the_neighbours(tmp_path, seed):
    _communities(tmp_path, seed)
    run = attnkit.train(_config(tmp_path), {"train.seed": seed}, output_dir=tmp_path / "run")
    model = attnkit.load(run.best, "cpu")
    accuracy = model.evaluate("test", out=tmp_path / "eval")["accuracy"]
    assert accuracy >= 85.0  # features alone name the class for 2 nodes in 3


def test_configs_refuse_unknown_keys_and_values(tmp_path):
    _communities(tmp_path, 0)
    data = _config(tmp_path)
    with pytest.raises(ConfigError, match="model: unknown key 'head'"):
        parse_config({**data, "model": {"head": 2}}, "cfg")
    with pytest.raises(ConfigError, match="'gat3' is not one of gat, gatv2, none"):
        parse_config({**data, "model": {"attention": "gat3"}}, "cfg")
    with pytest.raises(ConfigError, match="train: unknown key 'scheduler'"):
        parse_config({**data, "train": {"scheduler": "cosine"}}, "cfg")


def test_cora_config_switches_data_set_with_one_key():
    from attnkit.api.training import read_yaml, shipped_configs_dir

    data = read_yaml(shipped_configs_dir() / "cora_gat.yaml")
    cfg = parse_config(attnkit.config.apply_overrides(data, ["data.name=citeseer"]), "cfg")
    assert cfg.data.name == "citeseer" and cfg.model.attention == "gat"


def test_api_explains_a_node_with_attention_saliency_and_pictures(tmp_path):
    _communities(tmp_path, 0)
    run = attnkit.train(_config(tmp_path, attention="gatv2"), output_dir=tmp_path / "run")
    model = attnkit.load(run.best, "cpu")
    explained = model.explain_node("n3")
    assert explained.index == 3 and explained.neighbours[0] == "n3"
    assert explained.hops[0] == 0 and set(explained.hops) <= {0, 1, 2}
    direct = [s for s, t in explained.edges.tolist() if t == 0]
    assert np.allclose(
        explained.weights[-1][[k for k, (_, t) in enumerate(explained.edges) if t == 0]].sum(0), 1.0
    )
    assert len(direct) == len(set(direct))
    assert np.isclose(explained.saliency.sum(), 1.0)
    as_dict = json.loads(json.dumps(explained.to_dict()))
    assert as_dict["prediction"] in ("c0", "c1", "c2")
    assert -1 <= (explained.agreement["rank_correlation"] or 0) <= 1
    explained.plot(tmp_path / "node.png")
    assert (tmp_path / "node.png").stat().st_size > 1000
    assert "<img" in explained._repr_html_()
    with pytest.raises(InputError, match="no node of that name") as refused:
        model.explain_node("nope")
    assert refused.value.name == "node"


def _explained(heads: int) -> NodeExplanation:
    """Node a with direct neighbours b (attended most), c and itself; d two hops away."""
    edges = np.array([[0, 0], [1, 0], [2, 0], [3, 1]])
    weights = np.array([[0.2] * heads, [0.5] * heads, [0.3] * heads, [1.0] * heads])
    weights[1, 0] = 0.7  # head 1 favours b more
    weights[0, 0] = 0.0
    return NodeExplanation(
        node="a", index=0, label="x", prediction="y", probs=[0.4, 0.6],
        neighbours=["a", "b", "c", "d"], hops=[0, 1, 1, 2], edges=edges, weights=[weights],
        saliency=np.array([0.1, 0.2, 0.6, 0.1]),
        agreement={"rank_correlation": -0.5, "same_top_neighbour": False},
        classes=["x", "x", "Neural_Networks", "-"],
    )  # fmt: skip


def test_explain_prints_a_table_of_the_neighbours_most_attended_first():
    lines = table(_explained(heads=2)).splitlines()
    assert lines[0] == "node a: label x, predicted y (wrong)"
    assert "Spearman's rho -0.50, same top neighbour: no" in lines[1]
    assert lines[2].split() == ["neighbour", "class", "head", "1", "head", "2", "mean", "saliency"]
    assert [line.split()[:2] for line in lines[3:6]] == [["b", "x"], ["c", "Neural_Networks"],
                                                         ["a", "(self)"]]  # fmt: skip
    assert lines[3].split()[2:] == ["0.700", "0.500", "0.600", "0.200"]
    assert lines[6] == "1 node at two hops not listed (--json: every node's saliency)"
    one = table(_explained(heads=1)).splitlines()
    assert one[2].split() == ["neighbour", "class", "attention", "saliency"]
    assert one[3].split() == ["b", "x", "0.700", "0.200"]


def _cli(*args, cwd):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "attnkit", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


@pytest.mark.slow
def test_cli_train_evaluate_plot_explain(tmp_path):
    _communities(tmp_path, 0)
    import yaml

    (tmp_path / "g.yaml").write_text(yaml.safe_dump(_config(tmp_path)))
    done = _cli("train", "g.yaml", "--output-dir", "run", "--set", "train.epochs=5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = _cli("evaluate", "--model", "run/best", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    scores = json.loads(done.stdout)
    assert scores["nodes"] == 45 and (tmp_path / "run/eval/best-test/report.html").is_file()
    done = _cli("plot", "--model", "run/best", "--node", "n0", "-o", "n0.png", cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "n0.png").is_file(), done.stderr
    done = _cli("plot", "--model", "run/best", "--entropy", "-o", "e.svg", cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "e.svg").is_file(), done.stderr
    done = _cli("explain", "--model", "run/best", "--node", "n0", "--node", "5", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("node n0: label c0, predicted") and "\nnode n5: " in done.stdout
    done = _cli(
        "explain", "--model", "run/best", "--node", "n0", "--node", "5", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert [e["node"] for e in json.loads(done.stdout)] == ["n0", "n5"]
    done = _cli("plot", "--model", "run/best", "--node", "999", "-o", "x.png", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "nodes 0..89" in done.stderr


def test_a_run_resumes_from_last_with_more_epochs(tmp_path):
    _communities(tmp_path, 1)
    config = _config(tmp_path)
    config["train"]["epochs"] = 4
    run = attnkit.train(config, output_dir=tmp_path / "run")
    first = json.loads((run.last / "trainer.json").read_text())["state"]
    assert first["epoch"] == 4 and first["stopped"] == "epochs"
    again = attnkit.train(config, {"train.epochs": 7}, output_dir=tmp_path / "run", resume=True)
    state = json.loads((again.last / "trainer.json").read_text())["state"]
    assert state["epoch"] == 7 and state["step"] == 7
    with pytest.raises(ConfigError, match="model.hidden"):
        attnkit.train(config, {"model.hidden": 5}, output_dir=tmp_path / "run", resume=True)


def test_tensorboard_gets_dev_scalars_and_the_entropy_picture(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _communities(tmp_path, 0)
    config = _config(tmp_path)
    config["train"].update(epochs=2, tensorboard=True)
    attnkit.train(config, output_dir=tmp_path / "run")
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"), size_guidance={"images": 0})
    events.Reload()
    assert "graph/entropy" in events.Tags()["images"]
    assert {"dev/accuracy", "dev/loss"} <= set(events.Tags()["scalars"])
