"""What a resumed run reads back from ``last/``, each part checked against this run first.

``trainer.safetensors`` holds the optimizer's per-parameter tensors
(``optimizer.<id>.<name>``) and the RNG states (``rng.torch``, and ``rng.cuda``
where a GPU trained); ``trainer.json`` holds the optimizer's ``param_groups``
and the trainer's counters. A crafted or damaged file must end as one
CheckpointError naming the file and key: a moment of the wrong shape makes a
fused Adam read past its buffers (a crash) or broadcast NaN into every weight.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any

import torch

from attnkit.data.bounded import ascii_int
from attnkit.errors import CheckpointError

RNG_KEYS = ("rng.torch", "rng.cuda")
# How an optimizer runs, not what it learned: this run's choice wins over the file's.
IMPLEMENTATION_FLAGS = ("fused", "foreach", "capturable", "differentiable")
# Non-negative by construction: a negative one would make sqrt() NaN.
NON_NEGATIVE = ("exp_avg_sq", "max_exp_avg_sq")
# [low, high) of the hyperparameters torch's optimizers refuse outside it
HYPERPARAMETER_RANGES = {
    "lr": (0.0, math.inf),
    "eps": (0.0, math.inf),
    "weight_decay": (0.0, math.inf),
    "betas": (0.0, 1.0),
}


def check_sections(data: Any, path: str | Path, required: tuple, optional: tuple = ()) -> dict:
    """``data`` as a mapping with every ``required`` key and no key outside required + optional."""
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(data).__name__}")
    for key in required:
        if key not in data:
            raise CheckpointError(f"{path}: {key!r} is missing")
    unknown = sorted(set(data) - set(required) - set(optional))
    if unknown:
        raise CheckpointError(
            f"{path}: unknown key {unknown[0]!r}; valid keys: {', '.join(required + optional)}"
        )
    return data


def dataclass_from_json(cls, data: Any, where: str):
    """An instance of dataclass ``cls`` from a JSON object whose fields are checked by type.

    Fields the object lacks keep their defaults (a checkpoint written before a
    field existed); unknown fields and values of the wrong type are errors.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    if not isinstance(data, dict):
        raise CheckpointError(f"{where}: expected a JSON object, got {type(data).__name__}")
    for key, value in data.items():
        if key not in fields:
            raise CheckpointError(f"{where}: unknown key {key!r}; valid keys: {', '.join(fields)}")
        if not has_type(value, hints[key]):
            raise CheckpointError(
                f"{where}.{key}: {short(value)} is not a valid {type_name(hints[key])}"
            )
    return cls(**data)


def check_tensor_names(
    tensors: dict[str, torch.Tensor], path: str | Path, extra: tuple[str, ...] = ()
) -> None:
    """Every key is ``optimizer.<id>.<name>``, an RNG state or one of ``extra``; ``rng.torch`` is
    there."""
    if "rng.torch" not in tensors:
        raise CheckpointError(f"{path}: 'rng.torch' is missing")
    for key in tensors:
        if key not in RNG_KEYS and key not in extra and not key.startswith("optimizer."):
            raise CheckpointError(f"{path}: unknown tensor {key!r}")


def restore_rng(tensors: dict[str, torch.Tensor], path: str | Path) -> None:
    """Set torch's (and CUDA's, when both sides have one) RNG state from ``tensors``."""
    _check_rng(tensors.get("rng.torch"), torch.get_rng_state(), path, "rng.torch")
    cuda = tensors.get("rng.cuda") is not None and torch.cuda.is_available()
    if cuda:
        _check_rng(tensors["rng.cuda"], torch.cuda.get_rng_state(), path, "rng.cuda")
    torch.set_rng_state(tensors["rng.torch"])
    if cuda:
        torch.cuda.set_rng_state(tensors["rng.cuda"])


def _check_rng(saved: torch.Tensor | None, own: torch.Tensor, path, key: str) -> None:
    if saved is None:
        raise CheckpointError(f"{path}: {key!r} is missing")
    if saved.dtype != own.dtype or saved.shape != own.shape:
        raise CheckpointError(
            f"{path}: {key} is {_describe(saved)}, this torch's RNG state is {_describe(own)}"
        )


def restore_optimizer(
    optimizer: torch.optim.Optimizer,
    info: Any,
    tensors: dict[str, torch.Tensor],
    json_path: str | Path = "trainer.json",
    tensors_path: str | Path = "trainer.safetensors",
) -> None:
    """Load the state :func:`optimizer_to_tensors` split, once every part fits.

    ``info`` (from ``json_path``) is ``{"param_groups", "scalars"}``; ``tensors``
    (from ``tensors_path``) hold ``optimizer.<id>.<name>``. Every tensor must
    have its parameter's shape and dtype (``step``: a finite count >= 0), be
    finite, and every parameter with state must have all of it.
    """
    info = check_sections(info, json_path, ("param_groups",), ("scalars",))
    params = [p for group in optimizer.param_groups for p in group["params"]]
    groups = _checked_groups(
        optimizer, info["param_groups"], f"{json_path}: optimizer.param_groups"
    )
    state: dict[int, dict] = {}
    for key, value in tensors.items():
        if key.startswith("optimizer."):
            pid, name = _parameter_id(key, len(params), tensors_path)
            state.setdefault(pid, {})[name] = value
    _add_scalars(optimizer, groups, info.get("scalars"), state, f"{json_path}: optimizer.scalars")
    group_of = {pid: group for group in groups for pid in group["params"]}
    for pid, values in state.items():
        where = f"{tensors_path}: optimizer.{pid}"
        _check_parameter_state(optimizer, group_of[pid], params[pid], values, where)
    try:
        optimizer.load_state_dict({"state": state, "param_groups": groups})
    except (KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise CheckpointError(
            f"{tensors_path}: optimizer state does not match this model ({exc})"
        ) from None


def _add_scalars(
    optimizer, groups: list[dict], scalars: Any, state: dict[int, dict], where: str
) -> None:
    """Merge the JSON part of the per-parameter state into ``state``.

    Adam keeps tensors only: a number in their place would reach the fused kernel.
    """
    if not scalars:
        return
    if _expected_names(optimizer, groups[0]) is not None or not isinstance(scalars, dict):
        raise CheckpointError(f"{where}: unexpected entries {short(scalars)}")
    n_params = sum(len(g["params"]) for g in groups)
    for pid, values in scalars.items():
        number = ascii_int(pid) if isinstance(pid, str) else None
        if number is None or number >= n_params or not isinstance(values, dict):
            raise CheckpointError(f"{where}: {str(pid)[:40]!r} names no parameter of this model")
        state.setdefault(number, {}).update(values)


def _checked_groups(optimizer: torch.optim.Optimizer, saved: Any, where: str) -> list[dict]:
    """The saved param groups, checked against this optimizer's; the implementation is ours.

    A key this torch has and the file lacks (written by an older torch) keeps this
    optimizer's value.
    """
    own = optimizer.state_dict()["param_groups"]
    if not isinstance(saved, list) or len(saved) != len(own):
        raise CheckpointError(
            f"{where}: expected a list of {len(own)} group(s); "
            "the optimizer state does not match this model"
        )
    groups = []
    for i, (mine, theirs) in enumerate(zip(own, saved, strict=True)):
        at = f"{where}[{i}]"
        check_sections(theirs, at, ("params",), tuple(k for k in mine if k != "params"))
        if theirs["params"] != mine["params"]:
            raise CheckpointError(
                f"{at}.params: parameter ids {short(theirs['params'])}, this "
                f"model's are {short(mine['params'])}; the optimizer state "
                "does not match this model"
            )
        group = dict(mine)
        for key, value in theirs.items():
            if key not in IMPLEMENTATION_FLAGS and key != "params":
                _check_hyperparameter(key, value, mine[key], at)
                group[key] = value
        groups.append(group)
    return groups


def _check_hyperparameter(key: str, value: Any, own: Any, where: str) -> None:
    """``value`` is of the kind of this optimizer's ``own``: numbers finite and in range."""
    sequence = isinstance(own, (list, tuple))  # betas: a tuple in memory, a list in JSON
    if _is_number(own) or sequence:
        numbers = list(value) if isinstance(value, (list, tuple)) else [value]
        ok = isinstance(value, (list, tuple)) == sequence and len(numbers) == (
            len(own) if sequence else 1
        )
        ok = ok and all(_is_number(n) and math.isfinite(n) for n in numbers)
        low, high = HYPERPARAMETER_RANGES.get(key, (-math.inf, math.inf))
        ok = ok and all(low <= n < high for n in numbers)
    else:
        ok = type(value) is type(own)
    if not ok:
        raise CheckpointError(
            f"{where}.{key}: {value!r} is not a valid value (this optimizer has {own!r})"
        )


def _parameter_id(key: str, n_params: int, path) -> tuple[int, str]:
    _, pid, name = (key.split(".", 2) + ["", ""])[:3]
    number = ascii_int(pid)
    if number is None or number >= n_params or not name:
        raise CheckpointError(
            f"{path}: {key!r} names no parameter of this model "
            f"(it has parameters 0..{n_params - 1})"
        )
    return int(pid), name


def _expected_names(optimizer: torch.optim.Optimizer, group: dict) -> set[str] | None:
    """The state an optimizer keeps per parameter, where this check knows it (Adam, AdamW)."""
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        names = {"step", "exp_avg", "exp_avg_sq"}
        return (names | {"max_exp_avg_sq"}) if group.get("amsgrad") else names
    return None


def _check_parameter_state(
    optimizer, group: dict, param: torch.Tensor, values: dict, where: str
) -> None:
    """One parameter's state: all names there, each tensor shaped, typed and valued rightly."""
    expected = _expected_names(optimizer, group)
    if expected is not None and set(values) != expected:
        missing, extra = sorted(expected - set(values)), sorted(set(values) - expected)
        raise CheckpointError(
            f"{where}: "
            + (f"{missing[0]!r} is missing" if missing else f"unknown state {extra[0]!r}")
        )
    for name, value in values.items():
        at = f"{where}.{name}"
        if not torch.is_tensor(value):
            continue  # a JSON scalar of an optimizer this check does not know
        if name == "step":
            _check_step(value, at)
            continue
        if value.shape != param.shape or value.dtype != param.dtype:
            raise CheckpointError(
                f"{at} is {_describe(value)}, its parameter is {_describe(param)}"
            )
        if not bool(torch.isfinite(value).all()):
            raise CheckpointError(f"{at} holds NaN or infinite values")
        if name in NON_NEGATIVE and bool((value < 0).any()):
            raise CheckpointError(f"{at} holds negative values (a running mean of squares)")


def _check_step(value: torch.Tensor, where: str) -> None:
    """Adam's update count: a floating-point scalar holding a whole number >= 0."""
    if value.dim() != 0 or not value.is_floating_point():
        raise CheckpointError(f"{where} is {_describe(value)}, expected a floating-point scalar")
    count = float(value)
    if not (math.isfinite(count) and count >= 0 and count.is_integer()):
        raise CheckpointError(f"{where} is {count}, expected a whole number of updates >= 0")


def check_scheduler_state(scheduler, saved: Any, where: str) -> dict:
    """A saved ``scheduler.state_dict()`` with this scheduler's keys and kinds of value.

    ``load_state_dict`` sets an attribute for every key it gets: unknown ones are refused.
    """
    own = scheduler.state_dict()
    check_sections(saved, where, tuple(own))
    for key, value in saved.items():
        mine = own[key]
        if mine is None or value is None:
            continue
        sequence = isinstance(mine, (list, tuple))
        values, mine_values = (value, mine) if sequence else ([value], [mine])
        ok = isinstance(values, list) and len(values) == len(mine_values)
        ok = ok and all(
            _is_number(a) and not math.isnan(a) if _is_number(b) else type(a) is type(b)
            for a, b in zip(values, mine_values, strict=True)
        )
        if not ok:
            raise CheckpointError(
                f"{where}.{key}: {value!r} is not a valid value (this scheduler has {mine!r})"
            )
    return saved


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def has_type(value: Any, hint) -> bool:
    """Whether a JSON value fits a field's type (int, float, bool, str, list, X | None)."""
    if hint is typing.Any:
        return True
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    options = typing.get_args(hint) if union else (hint,)
    for option in options:
        origin = typing.get_origin(option) or option
        if option is type(None) and value is None:
            return True
        if origin is float and _is_number(value) and math.isfinite(value):
            return True
        if origin is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if origin in (bool, str, list, dict) and isinstance(value, origin):
            return True
    return False


def type_name(hint) -> str:
    return str(hint).replace("typing.", "").replace("<class '", "").replace("'>", "")


def _describe(tensor: torch.Tensor) -> str:
    return f"{str(tensor.dtype).removeprefix('torch.')} {tuple(tensor.shape)}"


def short(value: Any) -> str:
    """``repr`` cut to fit one line of an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def optimizer_to_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict, dict[str, torch.Tensor]]:
    """Split ``optimizer.state_dict()`` into JSON-able scalars and named tensors."""
    state = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict] = {}
    for pid, pstate in state["state"].items():
        for name, value in pstate.items():
            if torch.is_tensor(value):
                tensors[f"optimizer.{pid}.{name}"] = value
            else:
                scalars.setdefault(str(pid), {})[name] = value
    return {"param_groups": state["param_groups"], "scalars": scalars}, tensors
