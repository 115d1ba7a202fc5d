"""Typed configuration: dataclasses loaded from YAML, overridable with ``--set``.

Every experiment file has sections that map onto dataclasses. Loading rejects
unknown keys (listing the valid ones), checks types and choices, and names the
file and key in every error. Overrides use dotted keys: ``model.hidden=256``;
their values are parsed as YAML scalars (``true``, ``3``, ``1e-3``, ``[a, b]``).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from attnkit.errors import ConfigError

T = TypeVar("T")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """Check ``value`` against the annotation ``tp`` (int accepted for float)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except ConfigError:
                continue
        raise ConfigError(
            f"{where}: expected {' or '.join(_type_name(a) for a in args)}, got {value!r}"
        )
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item_tp, *_) = typing.get_args(tp) or (Any,)
        return [_coerce(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
    if tp is Any:
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if tp is float:
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):  # YAML 1.1 reads "3e-4" as a string
            try:
                number = float(value)
            except ValueError:
                pass
        if number is None:
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        if math.isnan(number):  # NaN is no setting of anything
            raise ConfigError(f"{where}: expected a number, got NaN")
        return number
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where)
    return value


def join_key(where: str, name: str) -> str:
    """'file.yaml' + 'model' -> 'file.yaml: model'; 'file.yaml: model' + 'rnn' -> 'file.yaml:
    model.rnn'."""
    return f"{where}.{name}" if ": " in where else f"{where}: {name}"


def from_dict(cls: type[T], data: Any, where: str = "config") -> T:
    """Build dataclass ``cls`` from a mapping, rejecting unknown keys and bad values.

    A dataclass may define ``CHOICES: dict[field, tuple]`` for enumerated
    fields and ``validate(self, where)`` for cross-field checks.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: expected a mapping of keys to values, got {type(data).__name__}"
        )
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields), key=repr)  # YAML keys may be numbers or null
    if unknown:
        raise ConfigError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; valid keys: {', '.join(fields)}"
        )
    kwargs = {}
    choices = getattr(cls, "CHOICES", {})
    for name, value in data.items():
        key = join_key(where, name)
        value = _coerce(value, hints[name], key)
        if name in choices and value is not None and value not in choices[name]:
            raise ConfigError(
                f"{key}: {value!r} is not one of {', '.join(map(str, choices[name]))}"
            )
        kwargs[name] = value
    obj = cls(**kwargs)
    if hasattr(obj, "validate"):
        obj.validate(where)
    return obj


#: a range rule for :func:`check_values`: (test of the value, what the value must be)
Rule = tuple[Callable[[Any], bool], str]


def at_least(low: int, null: bool = False) -> Rule:
    """An integer (or, with ``null``, None) >= ``low``."""
    return (
        lambda v: (null and v is None) or (v is not None and v >= low),
        f"at least {low}" + (" (or null)" if null else ""),
    )


def above(low: float, null: bool = False) -> Rule:
    """A finite number (or, with ``null``, None) > ``low``."""
    return (
        lambda v: (null and v is None) or (v is not None and math.isfinite(v) and v > low),
        f"a finite number > {low:g}" + (" (or null)" if null else ""),
    )


def not_below(low: float, null: bool = False) -> Rule:
    """A finite number (or, with ``null``, None) >= ``low``."""
    return (
        lambda v: (null and v is None) or (v is not None and math.isfinite(v) and v >= low),
        f"a finite number >= {low:g}" + (" (or null)" if null else ""),
    )


def between(low: float, high: float) -> Rule:
    """A number in [low, high)."""
    return (lambda v: low <= v < high, f"in [{low:g}, {high:g})")


def check_values(obj: Any, where: str, rules: dict[str, Rule]) -> None:
    """ConfigError naming the key of the first field of ``obj`` that breaks its rule."""
    for name, (ok, rule) in rules.items():
        value = getattr(obj, name)
        if not ok(value):
            raise ConfigError(f"{join_key(where, name)}: must be {rule}, got {value!r}")


def check_applicable(obj: Any, given: Any, where: str) -> None:
    """Reject keys the user gave (``given``, the raw mapping) that ``obj``'s other settings ignore.

    A dataclass may define ``APPLIES: dict[field, (attribute, values[, label])]``:
    the field applies only while ``getattr(obj, attribute)`` is one of ``values``
    (the message calls the attribute ``label`` when given).
    A key left at its default passes: a checkpoint's saved config lists every key, and
    training again from it must work. Nested dataclass sections are checked with their
    part of ``given``.
    """
    if not isinstance(given, dict) or not dataclasses.is_dataclass(obj):
        return
    applies = getattr(obj, "APPLIES", {})
    defaults = {f.name: f.default for f in dataclasses.fields(obj)}
    for name, value in given.items():
        key = join_key(where, name)
        if name in applies and value != defaults.get(name, dataclasses.MISSING):
            attribute, values, *label = applies[name]
            actual = getattr(obj, attribute)
            if actual not in values:
                raise ConfigError(
                    f"{key}: applies only to {label[0] if label else attribute} "
                    f"{' or '.join(map(str, values))}, not {actual}"
                )
        child = getattr(obj, name, None)
        if dataclasses.is_dataclass(child):
            check_applicable(child, value, key)


def to_dict(obj: Any) -> dict:
    """A dataclass tree as plain dicts/lists (for YAML/JSON)."""
    return dataclasses.asdict(obj)


def apply_overrides(data: dict, overrides: Iterable[str], where: str = "--set") -> dict:
    """Apply ``section.key=value`` strings to a nested dict (a copy is returned)."""
    data = copy.deepcopy(data)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"{where} {item!r}: expected KEY=VALUE, e.g. model.hidden=256")
        key, raw = item.split("=", 1)
        parts = [p for p in key.strip().split(".") if p]
        if not parts:
            raise ConfigError(f"{where} {item!r}: empty key")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"{where} {item!r}: cannot parse the value ({exc})") from None
        node = data
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"{where} {item!r}: {part!r} is not a section")
            node = child
        node[parts[-1]] = value
    return data


def read_yaml(path: str | Path) -> dict:
    """A YAML mapping from ``path``; ConfigError naming the file (and line) otherwise."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())  # one line
        raise ConfigError(f"{path}{line}: invalid YAML ({problem})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return data
