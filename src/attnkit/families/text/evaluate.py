"""``attnkit evaluate`` of a text classifier: score a split and write everything down.

The output directory (default ``RUN/eval/CHECKPOINT-SPLIT``) gets:

* ``scores.json`` -- accuracy, error % and the number of sentences and errors;
* ``predictions.tsv`` -- one row per sentence in split order: ``index``, ``label``, ``answer``,
  ``right`` (1 or 0), ``text``, under a header row;
* ``report.html`` -- the scores and the first :data:`REPORT_SENTENCES` sentences (errors
  first), each with its words shaded by the attention the model paid them, and by their
  gradient saliency on a toggle (:mod:`attnkit.explain.text_saliency`), in the report every
  family shares (:func:`attnkit.viz.report.write_report`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit.data.tasks.text import checkpoint_split, encode, task_name
from attnkit.errors import ConfigError
from attnkit.evaluation.summary import default_eval_dir
from attnkit.explain.text_saliency import text_saliency
from attnkit.families.text.bundle import TextBundle
from attnkit.families.text.scoring import Answer, accuracy, predict, record_of
from attnkit.viz.records import AttentionRecord
from attnkit.viz.report import Tally, write_report

REPORT_SENTENCES = 60  # sentences in report.html (each is a saliency pass)


def score_text(
    bundle: TextBundle, split: str = "test", data_dir: str | Path | None = None
) -> tuple[dict, list, list[Answer]]:
    """(scores, examples, answers) of ``bundle``'s model on ``split`` ("test" or "dev"), read
    from ``data_dir`` (:func:`~attnkit.data.tasks.text.checkpoint_split`)."""
    if split not in ("test", "dev"):
        raise ConfigError(f"split {split!r}: evaluate reads test or dev")
    examples = checkpoint_split(bundle.config.data, split, bundle.labels, data_dir)
    t_cfg = bundle.config.train
    answers = predict(
        bundle.model, [e.words for e in examples], bundle.vocab, t_cfg.eval_batch_size
    )
    acc = accuracy(answers, [e.label for e in examples])
    errors = sum(a.label != e.label for a, e in zip(answers, examples, strict=True))
    cfg = bundle.config
    scores = {
        "family": "text",
        "split": split,
        "task": task_name(cfg.data),
        "model": f"{cfg.model.encoder} + {cfg.model.attention}",
        "sentences": len(examples),
        "accuracy": acc,
        "error_pct": 100.0 * (1.0 - acc),
        "errors": errors,
    }
    return scores, examples, answers


def explained_records(
    bundle: TextBundle,
    sentences: Sequence[Sequence[str]],
    answers: Sequence[Answer],
    labels: Sequence[int | None],
    method: str = "gradient",
    indices: Sequence[int] | None = None,
) -> list[AttentionRecord]:
    """Each sentence's record (:func:`record_of`) with the saliency of its predicted class."""
    if not sentences:
        return []
    device = next(bundle.model.parameters()).device
    tokens, mask = encode(sentences, bundle.vocab)
    targets = torch.tensor([a.label for a in answers])
    maps = text_saliency(
        bundle.model, tokens.to(device), mask.to(device), targets.to(device), method
    )
    maps = maps.cpu().numpy()
    return [
        record_of(
            words,
            answer,
            bundle.labels,
            label,
            saliency=maps[i, : len(words)],
            index=None if indices is None else indices[i],
        )
        for i, (words, answer, label) in enumerate(zip(sentences, answers, labels, strict=True))
    ]


def evaluate_to_dir(
    bundle: TextBundle,
    checkpoint: Path,
    split: str = "test",
    out_dir: Path | None = None,
    data_dir: str | Path | None = None,
) -> dict:
    """Score ``bundle`` on ``split`` (read from ``data_dir``, as :func:`score_text`) and write
    scores.json, predictions.tsv and report.html to ``out_dir`` (default
    ``RUN/eval/CHECKPOINT-SPLIT``); the scores with ``"out"``."""
    scores, examples, answers = score_text(bundle, split, data_dir)
    scores = {"checkpoint": str(checkpoint), **scores}
    out = Path(out_dir) if out_dir is not None else default_eval_dir([checkpoint], split)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    rows = ["index\tlabel\tanswer\tright\ttext"]
    for i, (e, a) in enumerate(zip(examples, answers, strict=True)):
        gold, said = bundle.labels[e.label], bundle.labels[a.label]
        rows.append(f"{i}\t{gold}\t{said}\t{int(a.label == e.label)}\t{' '.join(e.words)}")
    (out / "predictions.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    wrong = [i for i, (e, a) in enumerate(zip(examples, answers)) if a.label != e.label]
    right = [i for i in range(len(examples)) if i not in set(wrong)]
    shown = sorted((wrong + right)[:REPORT_SENTENCES])
    records = explained_records(
        bundle,
        [examples[i].words for i in shown],
        [answers[i] for i in shown],
        [examples[i].label for i in shown],
        indices=shown,
    )
    attention = bundle.config.model.attention
    write_report(
        out / "report.html",
        f"attnkit evaluate: {scores['model']} ({scores['task']}, {split})",
        scores,
        records,
        config=bundle.config.to_dict(),
        notes=f"{scores['errors']:,} of {scores['sentences']:,} sentences wrong. Each sentence's "
        "words are shaded by the attention the model paid them (the map's one row is its answer), "
        "or by their gradient saliency (the choice above the map).",
        map_title=None if attention != "none" else "no attention: gradient saliency",
        tally=Tally(scores["errors"], scores["sentences"]),
    )
    return {**scores, "out": str(out)}


def summary(scores: dict) -> str:
    """Three lines for a person: the accuracy and where the files are."""
    out = Path(scores["out"])
    return (
        f"{scores['model']} on {scores['task']} ({scores['split']}): accuracy "
        f"{100 * scores['accuracy']:.2f}% ({scores['errors']:,} of {scores['sentences']:,} "
        f"sentences wrong)\nscores: {out / 'scores.json'}\nreport: {out / 'report.html'}"
    )
