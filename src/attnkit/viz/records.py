"""Attention as data: one decoded example with its weights, saved and loaded.

An :class:`AttentionRecord` holds what a picture of attention needs: the
source and output text, their tokens (the axis labels) and the weights
``(T, S)``, rows = output tokens, columns = source tokens; for a Transformer also
``heads`` ``(T, L, H, S)``, every layer's and head's attention (``weights`` is their mean),
and, where computed, its attention ``rollout`` and ``flow`` ``(T, S)``; beside any model's, its
gradient ``saliency`` ``(T, S)`` (``attnkit explain``). A record of an evaluation also says
where it came from (``index``), whether it is ``right`` (judged against all of its references)
and, for a translation task, its sentence ``chrf``; files without these keys (older ones) load
with them unset.

Two file formats, neither of which ever unpickles anything:

* ``.json``: ``{"format": "attnkit-attention", "version": 1, "records": [...]}``,
  weights as nested lists rounded to 5 decimals (human-readable, diffable);
* ``.npz``: ``weights_0, weights_1, ...`` as float arrays plus ``meta``, an
  array of JSON strings with everything else (float32 weights, compact);
  ``np.load(path, allow_pickle=False)`` reads it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.errors import DataError

FORMAT = "attnkit-attention"
VERSION = 1
#: the optional maps of a record the shape of its weights (drawn instead of them on a choice)
MAPS = ("saliency", "rollout", "flow")


class RecordsFileError(DataError, ValueError):
    """A records file that is missing, foreign or malformed; names the file.

    A :class:`ValueError` for callers of the documented interface and an
    :class:`~attnkit.errors.AttnkitError` so the CLI reports it in one line.
    """


@dataclass
class AttentionRecord:
    """One example: source, output, and where each output token looked.

    ``weights`` has shape ``(T, S)``: ``T = len(output_tokens)`` rows and
    ``S = len(source_tokens)`` columns. ``heads`` (T, L, H, S), where the model has layers and
    heads of attention (a Transformer), else None.
    """

    source: str
    source_tokens: list[str]
    output: str
    output_tokens: list[str]
    weights: np.ndarray
    reference: str | None = None
    score: float | None = None
    heads: np.ndarray | None = None
    index: int | None = None  # position among the evaluated inputs (split order)
    right: bool | None = None  # judged by the evaluation (any reference matched); else unset
    chrf: float | None = None  # sentence chrF (0..100) against ``reference``, for translations
    #: the task's gold alignment links of this source and output, (output row, source column)
    #: pairs, where the task has them (numbers, dates); pictures outline those cells
    gold: list[tuple[int, int]] | None = None
    #: (T, S) the gradient saliency of the same outputs (``attnkit explain``), shown beside the
    #: attention; None elsewhere
    saliency: np.ndarray | None = None
    #: (T, S) a Transformer's attention rollout and flow through its encoder, forced along the
    #: same output (:mod:`attnkit.explain.rollout`), where computed; else None
    rollout: np.ndarray | None = None
    flow: np.ndarray | None = None
    #: (T,) a copying model's p_gen at every output step (1: written from the vocabulary, 0:
    #: copied from the source), drawn beside the map; None for other models
    p_gen: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.source_tokens = [str(t) for t in self.source_tokens]
        self.output_tokens = [str(t) for t in self.output_tokens]
        self.weights = np.asarray(self.weights, dtype=np.float64)
        expected = (len(self.output_tokens), len(self.source_tokens))
        if self.weights.shape != expected:
            raise ValueError(
                f"attention weights have shape {self.weights.shape}, expected "
                f"{expected} = (len(output_tokens), len(source_tokens))"
            )
        if self.score is not None:
            self.score = float(self.score)
        if self.chrf is not None:
            self.chrf = float(self.chrf)
        if self.index is not None:
            self.index = int(self.index)  # numpy integers are not JSON
        if self.right is not None:
            self.right = bool(self.right)
        if self.gold is not None:
            self.gold = sorted((int(j), int(i)) for j, i in self.gold)
            rows, cols = expected
            outside = [(j, i) for j, i in self.gold if not (0 <= j < rows and 0 <= i < cols)]
            if outside:
                raise ValueError(f"gold link {outside[0]} is outside the {rows} x {cols} map")
        for name in MAPS:
            if getattr(self, name) is not None:
                setattr(self, name, np.asarray(getattr(self, name), dtype=np.float64))
                if getattr(self, name).shape != expected:
                    raise ValueError(
                        f"{name} has shape {getattr(self, name).shape}, expected {expected} (the "
                        "weights')"
                    )
        if self.p_gen is not None:
            self.p_gen = np.asarray(self.p_gen, dtype=np.float64)
            if self.p_gen.shape != expected[:1]:
                raise ValueError(f"p_gen has shape {self.p_gen.shape}, expected ({expected[0]},)")
        if self.heads is not None:
            self.heads = np.asarray(self.heads, dtype=np.float64)
            t, s = expected
            if self.heads.ndim != 4 or (self.heads.shape[0], self.heads.shape[3]) != (t, s):
                raise ValueError(
                    f"per-head weights have shape {self.heads.shape}, expected (T, L, H, S) with "
                    f"T = {t} output and S = {s} source tokens"
                )

    @property
    def layers_and_heads(self) -> tuple[int, int] | None:
        """(L, H) of a Transformer's record, else None."""
        return None if self.heads is None else (self.heads.shape[1], self.heads.shape[2])

    @property
    def correct(self) -> bool | None:
        """``right`` where the evaluation judged it; else True/False when a reference exists
        (exact match after strip), else None."""
        if self.right is not None:
            return self.right
        if self.reference is None:
            return None
        return self.output.strip() == self.reference.strip()

    def meta(self) -> dict[str, Any]:
        """Everything but the weights, as plain JSON types; ``index``, ``right`` and ``chrf`` only
        where set (a file without them reads as before)."""
        score = self.score
        if score is not None and not math.isfinite(score):
            score = None  # JSON has no inf/nan; -inf log-probs become "unknown"
        meta = {
            "source": self.source,
            "source_tokens": list(self.source_tokens),
            "output": self.output,
            "output_tokens": list(self.output_tokens),
            "reference": self.reference,
            "score": score,
        }
        judged = {"index": self.index, "right": self.right, "chrf": self.chrf}
        meta.update({k: v for k, v in judged.items() if v is not None})
        if self.gold is not None:
            meta["gold"] = [list(link) for link in self.gold]
        return meta

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types; weights as nested lists rounded to 5 decimals."""
        obj = self.meta()
        obj["weights"] = np.round(self.weights, 5).tolist()
        if self.heads is not None:
            obj["heads"] = np.round(self.heads, 5).tolist()
        for name in MAPS:
            if getattr(self, name) is not None:
                obj[name] = np.round(getattr(self, name), 5).tolist()
        if self.p_gen is not None:
            obj["p_gen"] = np.round(self.p_gen, 5).tolist()
        return obj

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> AttentionRecord:
        """Inverse of :meth:`to_json`; raises ValueError/KeyError/TypeError on bad input."""
        if not isinstance(obj, dict):
            raise TypeError(f"a record must be a JSON object, got {type(obj).__name__}")
        return cls(
            source=_str(obj, "source"),
            source_tokens=_str_list(obj, "source_tokens"),
            output=_str(obj, "output"),
            output_tokens=_str_list(obj, "output_tokens"),
            weights=_weights(obj),
            reference=_optional(obj, "reference", str),
            score=_optional(obj, "score", (int, float)),
            heads=_heads(obj),
            index=_optional(obj, "index", int),
            right=_optional_bool(obj, "right"),
            chrf=_optional(obj, "chrf", (int, float)),
            gold=_gold(obj),
            **{k: None if obj.get(k) is None else np.asarray(obj[k], float) for k in MAPS},
            p_gen=None if obj.get("p_gen") is None else np.asarray(obj["p_gen"], float),
        )


def _gold(obj: dict) -> list[tuple[int, int]] | None:
    links = obj.get("gold")
    if links is None:
        return None
    if not isinstance(links, list) or not all(
        isinstance(x, list) and len(x) == 2 and all(type(v) is int for v in x) for x in links
    ):
        raise TypeError("'gold' must be a list of [output row, source column] pairs")
    return [(j, i) for j, i in links]


def _str(obj: dict, key: str) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise TypeError(f"'{key}' must be a string, got {type(value).__name__}")
    return value


def _str_list(obj: dict, key: str) -> list[str]:
    value = obj[key]
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise TypeError(f"'{key}' must be a list of strings")
    return value


def _optional(obj: dict, key: str, types) -> Any:
    value = obj.get(key)
    if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
        raise TypeError(f"'{key}' must be {getattr(types, '__name__', 'a number')} or null")
    return value


def _optional_bool(obj: dict, key: str) -> bool | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"'{key}' must be true, false or null")
    return value


def _weights(obj: dict) -> np.ndarray:
    weights = np.asarray(obj["weights"], dtype=np.float64)
    if weights.size == 0:  # [] or [[]]: give back the (T, 0) / (0, S) shape JSON lost
        weights = weights.reshape(len(obj["output_tokens"]), len(obj["source_tokens"]))
    return weights


def _heads(obj: dict) -> np.ndarray | None:
    if obj.get("heads") is None:
        return None
    heads = np.asarray(obj["heads"], dtype=np.float64)
    if heads.ndim != 4:
        raise ValueError(f"'heads' must be a (T, L, H, S) array, got {heads.ndim} dimensions")
    return heads


# --------------------------------------------------------------------- JSON


def save_records_json(records: list[AttentionRecord], path: str | Path) -> None:
    """Write ``records`` as an attnkit-attention JSON file (parent dirs created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"format": FORMAT, "version": VERSION, "records": [r.to_json() for r in records]}
    _atomic_write(path, lambda f: f.write(json.dumps(doc, ensure_ascii=False).encode()))


def load_records_json(path: str | Path) -> list[AttentionRecord]:
    """Read a file written by :func:`save_records_json`; ValueError naming the file otherwise."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordsFileError("no such attention records file", path) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordsFileError(f"not valid JSON ({e})", path) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RecordsFileError(f"not an attention records file (expected format '{FORMAT}')", path)
    if doc.get("version") != VERSION:
        raise RecordsFileError(
            f"unsupported version {doc.get('version')!r} (this attnkit reads {VERSION})", path
        )
    return _parse_all(doc.get("records"), path)


def _parse_all(items: Any, path: Path) -> list[AttentionRecord]:
    if not isinstance(items, list):
        raise RecordsFileError("'records' must be a list", path)
    records = []
    for i, obj in enumerate(items):
        try:
            records.append(AttentionRecord.from_json(obj))
        except (KeyError, TypeError, ValueError) as e:
            what = f"missing key {e}" if isinstance(e, KeyError) else str(e)
            raise RecordsFileError(f"record {i}: {what}", path) from None
    return records


# ---------------------------------------------------------------------- NPZ


def save_records_npz(records: list[AttentionRecord], path: str | Path) -> None:
    """Write ``records`` as ``.npz``: ``weights_<i>`` arrays plus ``meta`` JSON strings."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {
        f"weights_{i}": r.weights.astype(np.float32) for i, r in enumerate(records)
    }
    for name in ("heads", *MAPS, "p_gen"):  # optional arrays, where a record has them
        for i, r in enumerate(records):
            if getattr(r, name) is not None:
                arrays[f"{name}_{i}"] = getattr(r, name).astype(np.float32)
    meta = [
        json.dumps({"format": FORMAT, "version": VERSION, **r.meta()}, ensure_ascii=False)
        for r in records
    ]
    arrays["meta"] = np.array(meta, dtype=np.str_)  # unicode array: no pickle needed
    _atomic_write(path, lambda f: np.savez_compressed(f, **arrays))


def load_records_npz(path: str | Path) -> list[AttentionRecord]:
    """Read a file written by :func:`save_records_npz` (never unpickles)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            if "meta" not in npz.files:
                raise RecordsFileError("not an attention records file (no 'meta' array)", path)
            metas = [json.loads(str(m)) for m in npz["meta"]]
            for i, m in enumerate(metas):
                if not isinstance(m, dict) or m.get("format") != FORMAT:
                    raise RecordsFileError(f"record {i}: not an attention record", path)
                key = f"weights_{i}"
                if key not in npz.files:
                    raise RecordsFileError(f"record {i}: missing array '{key}'", path)
                m["weights"] = npz[key]
                for name in ("heads", *MAPS, "p_gen"):
                    if f"{name}_{i}" in npz.files:
                        m[name] = npz[f"{name}_{i}"]
    except FileNotFoundError:
        raise RecordsFileError("no such attention records file", path) from None
    except RecordsFileError:
        raise
    except (OSError, ValueError, EOFError) as e:  # zip/npy/JSON/pickle refusals
        raise RecordsFileError(f"not a readable .npz records file ({e})", path) from None
    return _parse_all(metas, path)


# ----------------------------------------------------------------- dispatch


def save_records(records: list[AttentionRecord], path: str | Path) -> None:
    """Save as ``.json`` or ``.npz`` by the file suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        save_records_json(records, path)
    elif suffix == ".npz":
        save_records_npz(records, path)
    else:
        raise ValueError(f"{path}: unknown attention records format '{suffix}' (use .json or .npz)")


def load_records(path: str | Path) -> list[AttentionRecord]:
    """Load a ``.json`` or ``.npz`` records file by its suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return load_records_json(path)
    if suffix == ".npz":
        return load_records_npz(path)
    raise ValueError(f"{path}: unknown attention records format '{suffix}' (use .json or .npz)")


def _atomic_write(path: Path, write) -> None:
    """Write through a temp file in the same directory, then rename into place."""
    from attnkit.checkpoint import open_temp_file  # torch is imported only where records are saved

    # the umask's mode, as any file the user writes (mkstemp's 0600 would stay after the rename)
    fd, tmp = open_temp_file(path.parent, f".{path.name}.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        tmp.replace(path)
    except OSError as exc:  # the user asked for ``path``: name it, never the temporary
        if exc.filename is not None and Path(os.fsdecode(exc.filename)) == tmp:
            exc.filename, exc.filename2 = str(path), None
        raise
    finally:
        tmp.unlink(missing_ok=True)
