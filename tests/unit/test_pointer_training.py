"""The pointer family end to end: it learns to sort (families/pointer/train.py on the shared
loop), its config errors are one line (families/pointer/config.py), and ``attnkit
train/evaluate/plot`` and the API (families/pointer/model.py) serve its checkpoints."""

import json

import pytest
import yaml

import attnkit
from attnkit.cli import main
from attnkit.errors import ConfigError, InputError
from attnkit.families.pointer.config import parse_config

SMALL = {
    "data.points": 5,
    "data.train_size": 3000,
    "data.dev_size": 200,
    "data.test_size": 200,
    "train.epochs": 3,
    "train.batch_size": 64,
    "model.hidden": 32,
    "model.attention_dim": 32,
    "train.threads": 1,
    "train.tensorboard": False,
    "train.progress": False,
}


def test_a_pointer_network_learns_to_sort_five_numbers(tmp_path):
    """141 updates: 79.0-84.0% exact permutations on test over seeds 1-3 (chance: 1/120)."""
    run = attnkit.train(
        "configs/pointer_sort10.yaml", overrides={**SMALL, "train.seed": 1}, output_dir=tmp_path
    )
    model = run.load("cpu")
    scores = model.evaluate("test", beam=1)
    assert scores["greedy"]["exact_match"] >= 50.0
    assert scores.metric == "exact_match" and scores.value == scores["greedy"]["exact_match"]
    solution = model.solve([0.9, 0.05, 0.5, 0.3, 0.7])
    assert sorted(solution.order) == [0, 1, 2, 3, 4]
    assert solution.to_dict()["order"] == solution.order
    with pytest.raises(InputError, match="duplicate"):
        model.solve([0.1, 0.1, 0.5, 0.3, 0.7])
    with pytest.raises(InputError, match="reads 1 coordinate"):
        model.solve([[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(InputError, match=r"points\[2\]: .* got 2") as ragged:
        model.solve([[0.1], [0.2], [0.3, 0.4]])  # the point at fault, not a ragged-array crash
    assert ragged.value.name == "points[2]"


def test_bad_configs_are_one_line_errors():
    with pytest.raises(ConfigError, match="unknown key 'nme'"):
        parse_config({"family": "pointer", "nme": 1})
    with pytest.raises(ConfigError, match="x.yaml: data.task: 'knapsack' is not one of sort"):
        parse_config({"data": {"task": "knapsack"}}, "x.yaml")
    with pytest.raises(ConfigError, match="beyond the exact TSP solver"):
        parse_config({"data": {"task": "tsp", "points": 20}}, "x.yaml")
    with pytest.raises(ConfigError, match="train: unknown key 'label_smoothing'"):
        parse_config({"train": {"label_smoothing": 0.1}}, "x.yaml")


def test_cli_trains_evaluates_and_plots_a_tiny_hull_model(tmp_path, capsys):
    cfg = yaml.safe_load(open("configs/pointer_hull10.yaml"))
    cfg["data"].update(points=6, train_size=300, dev_size=50, test_size=50)
    cfg["model"].update(hidden=16, attention_dim=16)
    cfg["train"].update(epochs=1, threads=1, tensorboard=True, progress=False)
    path = tmp_path / "hull.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run = tmp_path / "run"
    assert main(["train", str(path), "--output-dir", str(run)]) == 0
    assert (run / "best" / "model.safetensors").is_file()
    assert list((run / "tensorboard").glob("events.out.tfevents.*"))  # scalars and pictures
    capsys.readouterr()
    assert main(["evaluate", "--model", str(run / "best"), "--beam", "2", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["family"] == "pointer" and {"greedy", "beam2"} <= scores.keys()
    assert 0 <= scores["beam2"]["area_coverage"] <= 100
    picture = tmp_path / "hull.png"
    points = "0.1,0.1 0.9,0.2 0.5,0.9 0.5,0.5 0.3,0.4 0.7,0.6"
    assert main(["plot", "--model", str(run / "best"), points, "-o", str(picture)]) == 0
    assert picture.stat().st_size > 0
    duplicate = "0.1,0.1 0.9,0.2 0.1,0.1"
    assert main(["plot", "--model", str(run / "best"), duplicate, "-o", str(picture)]) == 2
    assert "duplicate point [0.1, 0.1]" in capsys.readouterr().err
    assert isinstance(attnkit.load(run), attnkit.PointerModel)
    assert main(["explain", "--model", str(run / "best"), "0.1"]) == 2  # one line: seq2seq only
    from attnkit.serve.models import load_models

    (served,) = load_models([run / "best"], device="cpu").values()  # the explorer's pointer view
    assert served.family == "pointer" and served.wrong_endpoint().endswith("use /v1/solve")


def test_the_cosine_ends_with_the_epochs_or_the_time_budget():
    from types import SimpleNamespace

    from attnkit.families.pointer.train import PointerAdapter
    from attnkit.training.state import TrainerState

    def rates(**train):
        cfg = parse_config(
            {"family": "pointer", "train": {"lr": 0.01, "min_lr": 0.0, "epochs": 4, **train}}
        )
        adapter = SimpleNamespace(cfg=cfg)
        state = TrainerState(epoch=1, planned_epochs=4)  # a quarter of the epochs done
        return [PointerAdapter.rate(adapter, state, 0, 10, seconds) for seconds in (0, 30, 60)]

    assert rates() == [None, None, None]  # constant: the optimizer's own rate
    by_epochs = rates(scheduler="cosine")  # no budget: the epochs alone
    assert by_epochs[0] == by_epochs[2] == pytest.approx(0.01 * (1 + 0.5**0.5) / 2)
    by_clock = rates(scheduler="cosine", max_minutes=1)  # half the minute: half the cosine
    assert by_clock[0] == by_epochs[0] and by_clock[1] == pytest.approx(0.005)
    assert by_clock[2] == pytest.approx(0.0)
    with pytest.raises(ConfigError, match="scheduler"):
        parse_config({"family": "pointer", "train": {"scheduler": "step"}})
