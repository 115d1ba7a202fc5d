"""Resume checks: trainer state that does not fit this run is one CheckpointError naming the key."""

import json
import math
from dataclasses import dataclass, field

import pytest
import torch

from attnkit.errors import CheckpointError
from attnkit.training import resume

JSON, TENSORS = "run/last/trainer.json", "run/last/trainer.safetensors"


def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def _trained(fused: bool, steps: int = 3):
    """A model, its Adam after ``steps`` updates, and that state as a checkpoint holds it."""
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, fused=fused)
    x = torch.randn(16, 4)
    for _ in range(steps):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    info, tensors = resume.optimizer_to_tensors(opt)
    # through JSON and copies, as from the files: no tensor shared with `opt`
    return model, opt, json.loads(json.dumps(info)), {k: v.clone() for k, v in tensors.items()}


def _fresh(fused: bool):
    model = _model(1)
    return model, torch.optim.Adam(model.parameters(), lr=0.01, fused=fused)


def _refused(opt, info, tensors, *needles):
    with pytest.raises(CheckpointError) as caught:
        resume.restore_optimizer(opt, info, tensors, JSON, TENSORS)
    for needle in needles:
        assert needle in str(caught.value), (needle, str(caught.value))
    assert not opt.state  # nothing was loaded
    return str(caught.value)


@pytest.mark.parametrize("fused", [False, True])
def test_round_trip_gives_the_same_next_update(fused):
    model, opt, info, tensors = _trained(fused)
    model2, opt2 = _fresh(fused)
    model2.load_state_dict(model.state_dict())
    resume.restore_optimizer(opt2, info, tensors, JSON, TENSORS)
    x = torch.randn(5, 4)
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    for p1, p2 in zip(model.parameters(), model2.parameters()):
        assert torch.equal(p1, p2)


CORRUPTIONS = {  # name -> (how the tensors are damaged, words the error must contain)
    "too short": (
        lambda t: t.update({"optimizer.0.exp_avg": torch.zeros(2)}),
        "optimizer.0.exp_avg",
    ),
    "broadcastable": (lambda t: t.update({"optimizer.0.exp_avg": torch.zeros(4)}), "(8, 4)"),
    "float64": (
        lambda t: t.update({"optimizer.2.exp_avg_sq": t["optimizer.2.exp_avg_sq"].double()}),
        "float64",
    ),
    "int64": (
        lambda t: t.update({"optimizer.1.exp_avg": t["optimizer.1.exp_avg"].long()}),
        "int64",
    ),
    "nan": (lambda t: t["optimizer.3.exp_avg"].fill_(math.nan), "NaN"),
    "inf": (lambda t: t["optimizer.3.exp_avg_sq"].fill_(math.inf), "optimizer.3.exp_avg_sq"),
    "negative square": (lambda t: t["optimizer.0.exp_avg_sq"].fill_(-1.0), "negative"),
    "negative step": (lambda t: t.update({"optimizer.0.step": torch.tensor(-1.0)}), "step"),
    "fractional step": (lambda t: t.update({"optimizer.0.step": torch.tensor(2.5)}), "step"),
    "vector step": (lambda t: t.update({"optimizer.0.step": torch.ones(3)}), "step"),
    "missing moment": (lambda t: t.pop("optimizer.1.exp_avg_sq"), "'exp_avg_sq' is missing"),
    "unknown state": (lambda t: t.update({"optimizer.1.momentum": torch.zeros(8)}), "'momentum'"),
    "unknown parameter": (
        lambda t: t.update({"optimizer.9.exp_avg": torch.zeros(3)}),
        "optimizer.9",
    ),
    "not a parameter id": (
        lambda t: t.update({"optimizer.x.exp_avg": torch.zeros(3)}),
        "optimizer.x",
    ),
}


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("name", CORRUPTIONS)
def test_damaged_optimizer_tensors_are_refused(fused, name):
    _, _, info, tensors = _trained(fused)
    damage, needle = CORRUPTIONS[name]
    damage(tensors)
    _, opt = _fresh(fused)
    _refused(opt, info, tensors, TENSORS, needle)


def _set_group(key, value):
    def damage(info):
        info["param_groups"][0][key] = value

    return damage


INFO_CORRUPTIONS = {
    "no param_groups": (lambda i: i.pop("param_groups"), "'param_groups' is missing"),
    "param_groups not a list": (lambda i: i.update(param_groups=5), "optimizer.param_groups"),
    "two groups": (lambda i: i["param_groups"].append(dict(i["param_groups"][0])), "1 group"),
    "unknown key": (lambda i: i.update(momentum=1), "unknown key 'momentum'"),
    "unknown group key": (_set_group("nesterov", True), "'nesterov'"),
    "nan lr": (_set_group("lr", math.nan), ".lr"),
    "negative lr": (_set_group("lr", -1.0), ".lr"),
    "string eps": (_set_group("eps", "tiny"), ".eps"),
    "beta of 1": (_set_group("betas", [0.9, 1.0]), ".betas"),
    "three betas": (_set_group("betas", [0.9, 0.99, 0.999]), ".betas"),
    "amsgrad not a bool": (_set_group("amsgrad", 1), ".amsgrad"),
    "other parameter ids": (_set_group("params", [0, 1, 2, 7]), ".params"),
    "scalars for adam": (lambda i: i.update(scalars={"0": {"step": 3}}), "optimizer.scalars"),
}


@pytest.mark.parametrize("name", INFO_CORRUPTIONS)
def test_damaged_optimizer_json_is_refused(name):
    _, _, info, tensors = _trained(True)
    damage, needle = INFO_CORRUPTIONS[name]
    damage(info)
    _, opt = _fresh(True)
    _refused(opt, info, tensors, JSON, needle)


def test_how_the_optimizer_runs_is_this_runs_choice():
    _, _, info, tensors = _trained(fused=True)
    info["param_groups"][0]["lr"] = 0.25  # what it learned comes from the file ...
    _, opt = _fresh(fused=False)
    resume.restore_optimizer(opt, info, tensors, JSON, TENSORS)
    group = opt.param_groups[0]
    assert group["lr"] == 0.25
    assert not group["fused"]  # ... how it runs does not


def test_a_group_key_of_an_older_torch_keeps_this_optimizers_value():
    _, _, info, tensors = _trained(fused=False)
    del info["param_groups"][0]["decoupled_weight_decay"]
    _, opt = _fresh(fused=False)
    resume.restore_optimizer(opt, info, tensors, JSON, TENSORS)
    assert opt.param_groups[0]["decoupled_weight_decay"] is False


def test_parameters_without_state_are_fine():
    _, _, info, tensors = _trained(fused=True)
    for key in [k for k in tensors if k.startswith("optimizer.3.")]:
        del tensors[key]  # as for a parameter that has had no gradient yet
    _, opt = _fresh(True)
    resume.restore_optimizer(opt, info, tensors, JSON, TENSORS)
    assert len(opt.state) == 3


def test_tensor_names_need_rng_and_nothing_unknown():
    _, _, _, tensors = _trained(False)
    with pytest.raises(CheckpointError, match=f"{TENSORS}: 'rng.torch' is missing"):
        resume.check_tensor_names(tensors, TENSORS)
    tensors["rng.torch"] = torch.get_rng_state()
    resume.check_tensor_names(tensors, TENSORS)
    tensors["weights.0"] = torch.zeros(1)
    with pytest.raises(CheckpointError, match="unknown tensor 'weights.0'"):
        resume.check_tensor_names(tensors, TENSORS)


def test_rng_state_restores_and_is_checked():
    state = torch.get_rng_state()
    expected = torch.rand(3)
    resume.restore_rng({"rng.torch": state}, TENSORS)
    assert torch.equal(torch.rand(3), expected)
    for bad in (state[:7], state.to(torch.int32)):
        with pytest.raises(CheckpointError, match=f"{TENSORS}: rng.torch is"):
            resume.restore_rng({"rng.torch": bad}, TENSORS)
    with pytest.raises(CheckpointError, match="'rng.torch' is missing"):
        resume.restore_rng({}, TENSORS)


def test_sections_required_and_unknown():
    assert resume.check_sections({"a": 1}, JSON, ("a",), ("b",)) == {"a": 1}
    with pytest.raises(CheckpointError, match=f"{JSON}: 'optimizer' is missing"):
        resume.check_sections({"state": {}}, JSON, ("state", "optimizer"))
    with pytest.raises(CheckpointError, match="unknown key 'extra'; valid keys: state, scheduler"):
        resume.check_sections({"state": {}, "extra": 1}, JSON, ("state",), ("scheduler",))
    with pytest.raises(CheckpointError, match="expected a JSON object, got list"):
        resume.check_sections([], JSON, ("state",))


@dataclass
class Counters:
    step: int = 0
    best: float | None = None
    elapsed_s: float = 0.0
    finished: bool = False
    history: list = field(default_factory=list)


def test_dataclass_from_json_checks_names_and_types():
    assert resume.dataclass_from_json(
        Counters, {"step": 4, "best": None, "elapsed_s": 2}, "s"
    ) == Counters(step=4, elapsed_s=2)
    assert resume.dataclass_from_json(Counters, {}, "s") == Counters()  # absent: the default
    for data, needle in [
        ({"step": "x"}, "s.step"),
        ({"step": True}, "s.step"),
        ({"step": 1.5}, "s.step"),
        ({"best": math.nan}, "s.best"),
        ({"elapsed_s": None}, "s.elapsed_s"),
        ({"finished": 1}, "s.finished"),
        ({"history": {}}, "s.history"),
        ({"bogus": 1}, "unknown key 'bogus'"),
        ([], "expected a JSON object"),
    ]:
        with pytest.raises(CheckpointError, match=f"^{needle}|: {needle}"):
            resume.dataclass_from_json(Counters, data, "s")


def test_scheduler_state_keys_and_kinds():
    opt = torch.optim.Adam(_model().parameters())
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    saved = json.loads(json.dumps(plateau.state_dict()))
    assert resume.check_scheduler_state(plateau, saved, "sched") == saved
    for key, value in [("optimizer", 5), ("mode", 3), ("best", math.nan), ("min_lrs", [0, 0])]:
        bad = {**saved, key: value}
        with pytest.raises(CheckpointError, match=f"sched.*{key}"):
            resume.check_scheduler_state(plateau, bad, "sched")
