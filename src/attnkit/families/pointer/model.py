"""A pointer-network checkpoint as a model object: ``solve(points)`` and ``evaluate()``.

::

    model = attnkit.load("runs/pointer_hull10/best")
    s = model.solve([[0.1, 0.2], [0.9, 0.1], [0.5, 0.9], [0.5, 0.4]])
    s.order, s.attention          # [0, 1, 2], (T, n + 1): the end slot, then the inputs
    s.plot("hull.png")            # the points and the chosen order beside the heatmap
    s.show()                      # the heatmap, inline in a notebook
    model.evaluate(split="test", beam=5)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnkit.data.tasks.pointer import check_points, make_split, polygon_area, tour_length
from attnkit.decoding.pointer import beam_pointer
from attnkit.errors import InputError
from attnkit.evaluation.scores import Scores
from attnkit.families import arguments as check
from attnkit.families.pointer.bundle import load_pointer
from attnkit.families.pointer.evaluate import DECIDING, decode_split, score_outputs
from attnkit.viz.inline import ShowsRecord
from attnkit.viz.pointer import plot_solution, slot_labels, step_labels
from attnkit.viz.records import AttentionRecord


@dataclass
class PointerSolution(ShowsRecord):
    """A pointer network's answer for one point set: ``order`` (the inputs chosen, 0-based),
    ``attention`` (T, n + 1) (slot 0: end), the ``points`` (n, d) and the task; ``figures``:
    the tour length or hull area of the answer."""

    points: np.ndarray
    order: list[int]
    attention: np.ndarray
    task: str
    log_prob: float
    figures: dict[str, float] = field(default_factory=dict)

    def record(self) -> AttentionRecord:
        """The attention as the record every heatmap view draws."""
        n = len(self.points)
        rows = step_labels(self.order, len(self.attention))
        return AttentionRecord(
            f"{n} points",
            slot_labels(n),
            " ".join(map(str, self.order)),
            rows,
            np.asarray(self.attention, dtype=np.float64),
            score=self.log_prob,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "points": np.round(self.points, 6).tolist(),
            "order": self.order,
            "attention": np.round(self.attention, 6).tolist(),
            "log_prob": self.log_prob,
            **self.figures,
        }

    def plot(self, path_or_ax=None, layer=None, head=None):
        """The points and the chosen order beside the heatmap (to a file, or a new figure);
        into an ``Axes``: the heatmap alone."""
        if path_or_ax is not None and not isinstance(path_or_ax, str | Path):
            return super().plot(path_or_ax, layer, head)
        return plot_solution(self.points, self.order, self.attention, self.task, path_or_ax)


class PointerModel:
    """A trained pointer network (see the module docstring)."""

    family = "pointer"

    def __init__(self, config, net, path: Path | None = None):
        self.config, self.net, self.path = config, net, path

    @classmethod
    def load(cls, directory: str | Path, device: str = "auto") -> PointerModel:
        config, net = load_pointer(directory, device)
        return cls(config, net, Path(directory))

    @property
    def task(self) -> str:
        return self.config.data.task

    def __repr__(self) -> str:
        data = self.config.data
        return f"PointerModel({data.task}, trained on n={data.points}, path={self.path})"

    def solve(self, points, beam: int = 1) -> PointerSolution:
        """One instance: ``points`` (n, 2) for hull and TSP, (n,) or (n, 1) values for sort.
        Duplicate points, or a point of the wrong width, are one-line InputErrors naming
        ``points`` (or the point, ``points[i]``)."""
        beam = check.integer(beam, "beam", 1, check.MAX_BEAM)  # as Seq2SeqModel.translate's
        if isinstance(points, str | bytes) or not hasattr(points, "__len__"):
            kind = "None" if points is None else type(points).__name__
            raise InputError(f"points: give a list or array of points, not {kind}", "points")
        dims = self.config.data.dims
        for i, point in enumerate(points):  # each point's width, before a ragged array
            width = len(point) if np.ndim(point) else 1  # a number (a sort value) is one
            if width != dims:
                raise InputError(
                    f"points[{i}]: a {self.task} model reads {dims} coordinate(s) per point, "
                    f"got {width}",
                    f"points[{i}]",
                )
        arr = check_points(points)
        device = next(self.net.parameters()).device
        inputs = torch.as_tensor(arr, dtype=torch.float32, device=device)[None]
        (found,) = beam_pointer(self.net, inputs, beam)
        figures = {}
        if self.task == "tsp":
            figures["tour_length"] = round(tour_length(arr, found.order), 6)
        elif self.task == "hull":
            figures["area"] = round(polygon_area(arr, found.order), 6)
        return PointerSolution(
            arr, found.order, found.attention, self.task, found.log_prob, figures
        )

    def evaluate(self, split: str = "test", beam: int | None = None, out=None) -> Scores:
        """Greedy and beam (``beam``, default the config's ``decode.beam_size``; 1: greedy only)
        scores of the task's ``split``, drawn as in training (same seed); ``out``: a directory
        for ``scores.json``."""
        data = self.config.data
        check.choice(split, "split", ("train", "dev", "test"))
        beam = self.config.decode.beam_size if beam is None else beam
        beam = check.integer(beam, "beam", 1, check.MAX_BEAM)
        instances = make_split(data, split)
        metric, higher = DECIDING[data.task]
        scores: dict[str, Any] = {
            "model": str(self.path),
            "family": "pointer",
            "task": data.task,
            "points": data.points,
            "split": split,
            "metric": metric,
            "higher_is_better": higher,
        }
        runs = {"greedy": 1} if beam <= 1 else {"greedy": 1, f"beam{beam}": beam}
        for name, width in runs.items():
            outputs = [p.order for p in decode_split(self.net, instances, width)]
            scores[name] = score_outputs(data.task, instances, outputs)
        if out is not None:
            out = Path(out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
            scores["out"] = str(out)
        return Scores(scores)
