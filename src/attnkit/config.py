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
import os
import reprlib
import stat
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from attnkit.errors import ConfigError

T = TypeVar("T")

#: bounds of any YAML attnkit reads (experiment configs, ``--set`` values, checkpoint configs):
#: real configs are a few kilobytes, a few levels deep and a few hundred values
MAX_YAML_BYTES = 1 << 20
MAX_YAML_DEPTH = 32
MAX_YAML_VALUES = 100_000
#: the most characters of a value a message shows
SHOWN_CHARS = 60

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, SHOWN_CHARS, SHOWN_CHARS
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6


def shown(value: Any) -> str:
    """``repr(value)`` for a message, in bounded time and at most :data:`SHOWN_CHARS` characters
    (a value read from YAML may be large: it is never formatted whole)."""
    text = _REPR.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


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
            f"{where}: expected {' or '.join(_type_name(a) for a in args)}, got {shown(value)}"
        )
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {shown(value)}")
        (item_tp, *_) = typing.get_args(tp) or (Any,)
        return [_coerce(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
    if tp is Any:
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected true or false, got {shown(value)}")
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
            raise ConfigError(f"{where}: expected a number, got {shown(value)}")
        if math.isnan(number):  # NaN is no setting of anything
            raise ConfigError(f"{where}: expected a number, got NaN")
        return number
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected an integer, got {shown(value)}")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where}: expected a string, got {shown(value)}")
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
            f"{', '.join(map(shown, unknown[:10]))}; valid keys: {', '.join(fields)}"
        )
    kwargs = {}
    choices = getattr(cls, "CHOICES", {})
    for name, value in data.items():
        key = join_key(where, name)
        value = _coerce(value, hints[name], key)
        if name in choices and value is not None and value not in choices[name]:
            raise ConfigError(
                f"{key}: {shown(value)} is not one of {', '.join(map(str, choices[name]))}"
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
            raise ConfigError(f"{join_key(where, name)}: must be {rule}, got {shown(value)}")


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


def applicable(obj: Any) -> Any:
    """A dataclass tree as plain dicts/lists (as :func:`to_dict`) without the keys its other
    settings ignore: a field of a class's ``APPLIES`` (see :func:`check_applicable`) or
    ``READ_ONLY_WITH`` (the same form, for keys read under other settings alone that are not
    refused when given, such as ``train.lr_factor`` beside a cosine schedule) whose attribute
    has none of the values. A rule whose deciding key the class lacks does not apply (speech's
    ``train.warmup_steps`` with no ``scheduler``). What a report shows of a run's config."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        rules = {**getattr(obj, "APPLIES", {}), **getattr(obj, "READ_ONLY_WITH", {})}
        rules = {name: rule for name, rule in rules.items() if hasattr(obj, rule[0])}
        return {
            f.name: applicable(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.name not in rules or getattr(obj, rules[f.name][0]) in rules[f.name][1]
        }
    if isinstance(obj, dict):
        return {key: applicable(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [applicable(value) for value in obj]
    return copy.deepcopy(obj)


#: the top-level keys of a family's experiment file (a family may add sections, e.g. ``decode``)
FAMILY_SECTIONS = ("family", "output_dir", "data", "model", "train")


def family_output_dir(
    data: Any, source: str, family: str, default: str, sections: tuple = FAMILY_SECTIONS
) -> str:
    """Check the top level of a family's experiment file and return its ``output_dir``.

    The top level must be a mapping of ``sections`` alone, ``family`` (when given) must name
    ``family``, and ``output_dir`` (``default`` when absent) must be a directory name; each
    failure is a ConfigError naming ``source`` and the key.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of sections")
    unknown = sorted(set(data) - set(sections), key=repr)  # YAML keys may be numbers or null
    if unknown:
        raise ConfigError(
            f"{source}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(shown, unknown[:10]))}; valid keys: {', '.join(sections)}"
        )
    if data.get("family", family) != family:
        raise ConfigError(
            f"{source}: family: {shown(data.get('family'))} is not a {family} config "
            f"(family: {family})"
        )
    output_dir = data.get("output_dir")
    output_dir = default if output_dir is None else output_dir
    if not isinstance(output_dir, str) or not output_dir:
        raise ConfigError(
            f"{source}: output_dir: expected a directory name, got {shown(output_dir)}"
        )
    return output_dir


def family_dict(family: str, output_dir: str, **sections: Any) -> dict:
    """What a family's config saves: its family, output_dir and each section as a mapping."""
    return {
        "family": family,
        "output_dir": output_dir,
        **{name: dataclasses.asdict(value) for name, value in sections.items()},
    }


def to_dict(obj: Any) -> dict:
    """A dataclass tree as plain dicts/lists (for YAML/JSON)."""
    return dataclasses.asdict(obj)


def apply_overrides(data: dict, overrides: Iterable[str], where: str = "--set") -> dict:
    """Apply ``section.key=value`` strings to a nested dict (a copy is returned)."""
    data = copy.deepcopy(data)
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"{where} {shown(item)}: expected KEY=VALUE, e.g. model.hidden=256")
        key, raw = item.split("=", 1)
        parts = [p for p in key.strip().split(".") if p]
        if not parts:
            raise ConfigError(f"{where} {shown(item)}: empty key")
        value = parse_yaml(raw, f"{where} {shown(item)}") if raw.strip() else ""
        node = data
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"{where} {shown(item)}: {shown(part)} is not a section")
            node = child
        node[parts[-1]] = value
    return data


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses nesting deeper than :data:`MAX_YAML_DEPTH` (before
    Python's recursion limit would) and a key given twice in one mapping (naming both lines)."""

    def __init__(self, stream, where: str):
        super().__init__(stream)
        self.where, self.depth = where, 0

    def compose_node(self, parent, index):
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise ConfigError(
                    f"{self.where}:{line}: nested deeper than {MAX_YAML_DEPTH} levels "
                    "(a config is a few levels deep)"
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag.endswith(":merge"):
                    continue
                key = (key_node.tag, key_node.value)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise ConfigError(
                        f"{self.where}:{line}: key {shown(key_node.value)} given twice "
                        f"(lines {seen[key]} and {line}); give it once"
                    )
                seen[key] = line
        return super().construct_mapping(node, deep)


def _expanded(node, where: str, memo: dict, depth: int = 1) -> int:
    """The number of values ``node`` stands for once its aliases are expanded; ConfigError when
    that is above :data:`MAX_YAML_VALUES`, deeper than twice :data:`MAX_YAML_DEPTH` or cyclic."""
    if depth > 2 * MAX_YAML_DEPTH:
        raise ConfigError(f"{where}: aliases nest it deeper than {2 * MAX_YAML_DEPTH} levels")
    key = id(node)
    if key in memo:
        if memo[key] is None:
            line = node.start_mark.line + 1
            raise ConfigError(f"{where}:{line}: an alias refers to the value that contains it")
        return memo[key]
    memo[key] = None  # in progress: meeting it again is a cycle
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded(child, where, memo, depth + 1) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            size += _expanded(k, where, memo, depth + 1) + _expanded(v, where, memo, depth + 1)
    if size > MAX_YAML_VALUES:
        raise ConfigError(
            f"{where}: more than {MAX_YAML_VALUES:,} values once its aliases are expanded "
            "(a config holds a few hundred)"
        )
    memo[key] = size
    return size


def parse_yaml(text: str, where: str) -> Any:
    """The value of one YAML document, read with bounds: at most :data:`MAX_YAML_BYTES`
    characters, :data:`MAX_YAML_DEPTH` levels, :data:`MAX_YAML_VALUES` values with aliases
    expanded (a "billion laughs" is refused before it is built), every key once per mapping.
    Anything else is a one-line ConfigError naming ``where`` (and the line)."""
    if len(text) > MAX_YAML_BYTES:
        raise ConfigError(
            f"{where}: {len(text):,} characters, above the limit of {MAX_YAML_BYTES:,}"
        )
    loader = None
    try:
        loader = _BoundedLoader(text, where)
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded(node, where, {})
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())[:200]  # one line
        raise ConfigError(f"{where}{line}: invalid YAML ({problem})") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_text_bounded(
    path: str | Path, limit: int, error: type[Exception] = ConfigError, regular: bool = False
) -> str:
    """A UTF-8 text file of at most ``limit`` bytes (a FIFO or device is read up to the limit,
    never further; ``regular``: refused unread, without waiting on a FIFO's writer, as a file of
    a checkpoint is); ``error`` naming the file and the limit otherwise."""
    path = Path(path)
    flags = os.O_RDONLY | (getattr(os, "O_NONBLOCK", 0) if regular else 0)
    try:
        with os.fdopen(os.open(path, flags), "rb") as stream:
            info = os.fstat(stream.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise error(f"{path}: is a directory, not a file")
            if regular and not stat.S_ISREG(info.st_mode):
                raise error(f"{path}: is a FIFO, device or socket, not a regular file (not read)")
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise error(f"{path}: {info.st_size:,} bytes, above the limit of {limit:,}")
            data = stream.read(limit + 1)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise error(f"{path}: more than {limit:,} bytes, the limit for this file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 (byte {exc.start + 1})") from None


def read_yaml(path: str | Path) -> dict:
    """A YAML mapping from ``path`` read with :func:`parse_yaml`'s bounds; ConfigError naming the
    file (and line) otherwise."""
    path = Path(path)
    if not os.path.lexists(path):
        raise ConfigError(f"{path}: no such config file")
    data = parse_yaml(read_text_bounded(path, MAX_YAML_BYTES), str(path))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return data
