"""``attnkit evaluate`` of a vision checkpoint: score a split and write everything down.

:func:`evaluate_vision` gives the error % on the test (or dev) split (:func:`score_vision` keeps
each image's answer); :func:`evaluate_to_dir` writes them with a report.

The output directory (default ``RUN/eval/CHECKPOINT-SPLIT``, beside the checkpoint like a seq2seq
evaluation's) gets:

* ``scores.json`` -- :func:`evaluate_vision`'s scores, plus the
  checkpoint and the number of errors;
* ``predictions.tsv`` -- one row per image in split order: ``image``, ``label``, ``answer``,
  ``right`` (1 or 0), under a header row;
* ``report.html`` -- the scores, then the first :data:`REPORT_ERRORS` errors, each with the
  picture of where the model looked (attention overlays or glimpse path) beside the picture of
  where its answer depends on the image (gradient saliency and Grad-CAM,
  :mod:`attnkit.families.vision.explain`), and its steps drawn by the shared heatmap renderer,
  then the first :data:`REPORT_RIGHT` right answers (:mod:`attnkit.viz.vision_report`).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from attnkit.checkpoint import checkpoint_dir
from attnkit.config import applicable
from attnkit.data.tasks.vision import Split, VisionData
from attnkit.errors import ConfigError
from attnkit.evaluation.summary import default_eval_dir
from attnkit.families.vision import explain as implicit
from attnkit.families.vision.bundle import load_vision_model
from attnkit.families.vision.config import VisionConfig
from attnkit.families.vision.kinds import ModelKind
from attnkit.families.vision.scoring import error_scores, predict_split
from attnkit.viz import visual
from attnkit.viz.vision_report import VisionExample, write_vision_report

REPORT_ERRORS = 24  # errors pictured in the report (each picture is a forward pass and a render)
REPORT_RIGHT = 6  # right answers pictured after them


@dataclass
class Scored:
    """A checkpoint scored on a split: what :func:`evaluate_vision` returns and a report shows."""

    cfg: VisionConfig
    kind: ModelKind
    model: nn.Module
    images: Split  # the split as generated (uint8 (N, H, W) and labels)
    answers: list[str]  # the model's answer to each image, as text
    right: np.ndarray  # (N,) bool
    scores: dict  # evaluate_vision's result


def score_vision(
    model_dir: Path,
    split: str = "test",
    mc_samples: int | None = None,
    device: str = "auto",
    loaded: tuple | None = None,
) -> Scored:
    """Score a checkpoint on ``split`` ("test" or "dev"), keeping every image's answer.
    ``loaded``: its (config, kind, model) already loaded (the Python API's model)."""
    if split not in ("test", "dev"):
        raise ConfigError(f"split {split!r}: evaluate reads test or dev")
    if mc_samples is not None and mc_samples < 1:
        raise ConfigError(f"--mc-samples must be at least 1, got {mc_samples}")
    cfg, kind, model = loaded if loaded is not None else load_vision_model(model_dir, device)
    dev = next(model.parameters()).device
    images = VisionData(cfg.data).split(split)
    data = kind.to_device(images, dev)
    mc = mc_samples if mc_samples is not None else kind.test_mc(cfg.model)
    with torch.random.fork_rng(devices=[dev.index or 0] if dev.type == "cuda" else []):
        torch.manual_seed(0)  # reproducible Monte Carlo glimpse paths
        answers, right = predict_split(kind, model, data, cfg.model, cfg.train.eval_batch_size, mc)
    scores = error_scores(len(right), float(right.sum()))
    scores = {"split": split, "task": cfg.data.task, "model": cfg.model_type, **scores}
    if mc is not None:
        scores["mc_samples"] = mc
    return Scored(cfg, kind, model, images, answers, right, scores)


def evaluate_vision(
    model_dir: Path, split: str = "test", mc_samples: int | None = None, device: str = "auto"
) -> dict:
    """Error % of a trained model on ``split`` ("test" or "dev").

    Returns ``{"split", "task", "model", "images", "accuracy", "error_pct"}``
    (plus ``"mc_samples"`` for RAM: glimpse paths averaged per image,
    ``model.mc_samples`` unless given). For strips, accuracy is whole-string.
    :func:`evaluate_to_dir` writes these with a report.
    """
    return score_vision(model_dir, split, mc_samples, device).scores


def evaluate_to_dir(
    model_dir: Path,
    split: str = "test",
    mc_samples: int | None = None,
    device: str = "auto",
    out_dir: Path | None = None,
    loaded: tuple | None = None,
) -> dict:
    """Score ``model_dir`` on ``split`` and write scores.json, predictions.tsv and report.html to
    ``out_dir`` (default: :func:`attnkit.evaluation.summary.default_eval_dir`); the scores, with
    ``"out"`` naming the directory. ``loaded`` as :func:`score_vision` takes it."""
    checkpoint = checkpoint_dir(model_dir)
    scored = score_vision(checkpoint, split, mc_samples, device, loaded)
    out = Path(out_dir) if out_dir is not None else default_eval_dir([checkpoint], split)
    out.mkdir(parents=True, exist_ok=True)
    scores = {
        "checkpoint": str(checkpoint),
        **scored.scores,
        "errors": int((~scored.right).sum()),
    }
    (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    _write_predictions(out / "predictions.tsv", scored)
    cfg = scored.cfg
    errors, right = _examples(scored)
    write_vision_report(
        out / "report.html",
        f"attnkit evaluate: {cfg.model_type} ({cfg.data.task}, {split})",
        scores,
        errors,
        right,
        config={
            **cfg.to_dict(),  # less the keys its other settings ignore
            **{section: applicable(getattr(cfg, section)) for section in ("data", "train")},
            "model": {"type": cfg.model_type, **applicable(cfg.model)},
        },
        notes=f"{scores['errors']:,} of {scores['images']:,} images wrong; each shows where the "
        "model looked beside where its answer depends on the image (gradient saliency, Grad-CAM), "
        "errors first.",
    )
    return {**scores, "out": str(out)}


def summary(scores: dict) -> str:
    """Two or three lines for a person: the error and where the files are."""
    mc = f", {scores['mc_samples']} glimpse paths per image" if "mc_samples" in scores else ""
    out = Path(scores["out"])
    return (
        f"{scores['model']} on {scores['task']} ({scores['split']}): error "
        f"{scores['error_pct']:.2f}% ({scores['errors']:,} of {scores['images']:,} images "
        f"wrong{mc})\nscores: {out / 'scores.json'}\nreport: {out / 'report.html'}"
    )


def _write_predictions(path: Path, scored: Scored) -> None:
    rows = ["image\tlabel\tanswer\tright"]
    rows += [
        f"{i}\t{label}\t{answer}\t{int(ok)}"
        for i, (label, answer, ok) in enumerate(
            zip(scored.images.labels, scored.answers, scored.right)
        )
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def _examples(scored: Scored) -> tuple[list[VisionExample], list[VisionExample]]:
    """The first errors and right answers of the split, each with its picture."""
    wrong = np.flatnonzero(~scored.right)[:REPORT_ERRORS]
    right = np.flatnonzero(scored.right)[:REPORT_RIGHT]
    kind, model = scored.kind, scored.model
    images, labels = scored.images.images, scored.images.labels
    torch.manual_seed(0)

    def example(i: int) -> VisionExample:
        figure = kind.figure(model, images[i], labels[i], scored.cfg.model)
        explained = implicit.explain_image(scored.cfg.model_type, model, images[i], labels[i])
        ok = bool(scored.right[i])
        view = {
            "image": np.round(images[i] / 255.0, 3).tolist(),  # (H, W) uint8 -> grey 0..1
            "steps": kind.steps(model, images[i], labels[i]),
        }
        return VisionExample(
            int(i),
            str(labels[i]),
            scored.answers[i],
            ok,
            _png(figure),
            view,
            implicit=_png(implicit.implicit_only(explained)),
        )

    return [example(i) for i in wrong], [example(i) for i in right]


def _png(figure) -> bytes:
    """A figure as PNG bytes (the report inlines them)."""
    buffer = io.BytesIO()
    visual.render(figure).save(buffer, format="PNG")
    return buffer.getvalue()
