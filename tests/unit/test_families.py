"""The family registry (``attnkit.families``) and its contract: a family defined outside
attnkit, one folder (``toyfamily/`` beside this file) and one record, trains, loads, evaluates,
plots and answers a server request once registered, with no edit anywhere else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

import attnkit
from attnkit.cli import main
from attnkit.errors import CheckpointError, ConfigError
from attnkit.families import FAMILIES, checkpoint_family, family_of, registered
from attnkit.families.base import Family
from attnkit.serve.app import ServeSettings, create_app


@pytest.fixture(autouse=True)
def _toy_importable(monkeypatch):
    """``toyfamily`` (beside this file) importable, whatever pytest's import mode."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


@pytest.fixture
def toy():
    from toyfamily import FAMILY

    with registered(FAMILY) as family:
        yield family


def _experiment(tmp_path: Path, **train) -> Path:
    path = tmp_path / "configs" / "toy_max.yaml"
    path.parent.mkdir(exist_ok=True)
    data = {"family": "toy", "output_dir": str(tmp_path / "run"), "train": train}
    path.write_text("# pool numbers to their largest\n" + yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_registered_family_trains_loads_evaluates_and_is_listed(toy, tmp_path, capsys):
    config = _experiment(tmp_path, epochs=25)
    (info,) = attnkit.configs(config.parent)
    assert (info.family, info.task, info.model) == ("toy", "max", "softmax pooling")
    assert info.about == "pool numbers to their largest"
    run = attnkit.train(config)
    assert run.best == tmp_path / "run" / "best"
    model = attnkit.load(run.directory)  # a run directory loads its best checkpoint
    assert type(model).__name__ == "ToyModel" and model.sharpness > 5
    weights, value = model.attend([0.1, 0.9, 0.3])
    assert weights.index(max(weights)) == 1 and value > 0.5
    # the one driver's run: its lines on stderr in the one format, and the run's own files
    err = capsys.readouterr().err
    assert "update 8 (epoch 1/25): dev mean_abs_error " in err and "lists/s" in err
    assert err.strip().splitlines()[-1].startswith("done (epochs): best dev mean_abs_error ")
    logged = (run.directory / "train.log").read_text(encoding="utf-8")
    assert "training the toy family" in logged and "update 200 (epoch 25/25)" in logged
    assert [m["update"] for m in run.history if m["kind"] == "dev"][:2] == [8, 16]
    untrained = attnkit.train(_experiment(tmp_path, epochs=1, lr=0.0), output_dir=tmp_path / "zero")
    scores, baseline = model.evaluate(), attnkit.load(untrained.best).evaluate()
    assert scores["mean_abs_error"] < baseline["mean_abs_error"] / 2
    assert "mean absolute error" in scores.table()  # the family's own table


def test_the_commands_run_a_registered_family_through_its_hooks(toy, tmp_path, capsys):
    best = attnkit.train(_experiment(tmp_path)).best
    assert main(["evaluate", "--model", str(best)]) == 0
    assert "test: mean absolute error" in capsys.readouterr().out
    picture = tmp_path / "weights.png"
    assert main(["plot", "--model", str(best), "0.2 0.8 0.1", "-o", str(picture)]) == 0
    assert picture.read_bytes().startswith(b"\x89PNG")
    # a command the family has no hook for, and another family's own option: one line each
    for argv, needle in (
        (["explain", "--model", best, "x"], "explain is for seq2seq"),
        (
            ["evaluate", "--model", best, "--stories", "s.txt"],
            "--stories: for memnet checkpoints, not a toy one",
        ),
        (["evaluate", "--model", best, "--model", best], "ensembles are for seq2seq"),
    ):
        assert main([str(a) for a in argv]) == 2
        assert needle in capsys.readouterr().err


def test_the_server_answers_a_registered_family_at_its_route(toy, tmp_path):
    best = attnkit.train(_experiment(tmp_path)).best
    with TestClient(create_app(ServeSettings(models=[best], names=["tiny"]))) as client:
        (listed,) = client.get("/v1/models").json()["models"]
        assert listed["family"] == "toy" and listed["attention"] == "softmax pooling"
        answer = client.post("/v1/toy", json={"numbers": [0.1, 0.7, 0.2]}).json()
        assert answer["model"] == "tiny" and max(answer["weights"]) == answer["weights"][1]
        wrong = client.post("/v1/translate", json={"model": "tiny", "inputs": ["a"]})
        assert wrong.status_code == 422
        assert wrong.json()["error"]["message"] == "model: 'tiny' is a toy model: use /v1/toy"
        assert "/v1/toy" in client.get("/openapi.json").json()["paths"]


def test_a_family_leaves_the_registry_as_it_was(tmp_path):
    from toyfamily import FAMILY

    before = dict(FAMILIES)
    with registered(FAMILY):
        best = attnkit.train(_experiment(tmp_path)).best
        with pytest.raises(ConfigError, match="registered already"):
            with registered(FAMILY):
                pass
    assert FAMILIES == before
    with pytest.raises(CheckpointError, match="a 'toy' checkpoint; this attnkit loads seq2seq"):
        attnkit.load(best)


def test_an_unknown_family_is_one_error_naming_the_known_ones(tmp_path):
    with pytest.raises(ConfigError, match=r"x\.yaml: family: 'smell' is no family; choose"):
        family_of("smell", "x.yaml: family")
    config = tmp_path / "bad.yaml"
    config.write_text("family: smell\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"{config}: family: 'smell' is no family"):
        attnkit.train(config)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_record_resolves_each_of_its_parts(name):
    family = FAMILIES[name]
    assert family_of(name) is family and family.package == f"attnkit.families.{name}"
    assert callable(family.model_class().load)
    assert family.model_class().family == name  # what its objects say they are
    assert callable(family.resolve(family.train))
    for command in ("plot", "evaluate"):
        assert callable(family.hook(command)), f"{name} has no {command} hook"
    if family.endpoint is not None:
        endpoint = family.served()
        assert endpoint.path.startswith("/v1/") and callable(endpoint.add_route)
    for public, ref in family.public_names().items():
        assert family.resolve(ref).__name__ == public


def test_the_families_share_no_route_and_no_public_name():
    paths = [f.served().path for f in FAMILIES.values() if f.endpoint is not None]
    assert len(paths) == len(set(paths)), paths
    names = [n for f in FAMILIES.values() for n in f.public_names()]
    assert len(names) == len(set(names)), names
    assert not set(names) & set(attnkit.GENERIC_API)


def test_a_family_public_names_are_attnkit_names(toy):
    for family in FAMILIES.values():
        for name, ref in family.public_names().items():
            assert getattr(attnkit, name) is family.resolve(ref) is getattr(attnkit.api, name)
    assert attnkit.ToyModel.__module__ == "toyfamily.model"  # registered after import
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        attnkit.Nothing  # noqa: B018


def test_a_family_scheme_routes_its_names_to_it_unchanged(monkeypatch):
    """``"<scheme>:<rest>"`` names a model its family loads (no meta.json): attnkit.load gives
    the family's loader the name as written, with the options, and --model finds the family."""
    import dataclasses

    from toyfamily import FAMILY
    from toyfamily.model import ToyModel

    from attnkit.families import scheme_family

    calls = []
    monkeypatch.setattr(ToyModel, "load", classmethod(lambda cls, *a, **o: calls.append((a, o))))
    with registered(dataclasses.replace(FAMILY, scheme="toyhub")) as family:
        assert scheme_family("toyhub:./a/b") is family is checkpoint_family(Path("toyhub:a"))
        assert scheme_family("toyhubx:a") is None and scheme_family("a/toyhub:b") is None
        attnkit.load("toyhub:./a/b", dtype="half")
        assert calls == [(("toyhub:./a/b", "auto"), {"dtype": "half"})]
        with pytest.raises(CheckpointError, match="toyhub:a: give one model"):
            attnkit.load(["toyhub:a", "toyhub:b"])


def test_the_checkpoint_family_is_read_from_meta_json(tmp_path):
    from attnkit.checkpoint import FORMAT, VERSION

    (tmp_path / "best").mkdir()
    meta = {"format": FORMAT, "version": VERSION, "family": "graph"}
    (tmp_path / "best" / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    assert checkpoint_family(tmp_path) is FAMILIES["graph"]  # a run directory: its best/


def test_a_family_resolves_absolute_and_relative_references():
    family = Family(name="x", package="attnkit.families.seq2seq", model="model:Seq2SeqModel",
                    train="train:train")  # fmt: skip
    assert family.resolve("model:Seq2SeqModel").__module__ == "attnkit.families.seq2seq.model"
    assert family.resolve("translator:Translation").__name__ == "Translation"
    assert family.resolve("attnkit.evaluation.scores:Scores").__name__ == "Scores"
    assert family.resolve("train").__name__ == "attnkit.families.seq2seq.train"
    assert family.hook("explain") is not None and family.hook("nonsense") is None
