"""Scores of a memory network on bAbI, and the files ``attnkit evaluate`` writes.

* per task: ``error_pct`` (answers wrong) and ``support_attention_pct`` (per hop: the share of
  questions whose most attended memory at that hop is a supporting fact; questions whose
  supporting facts fell out of the memory are left out), ``support_attention_all_pct`` (every
  hop on a supporting fact);
* over the tasks: ``mean_error_pct`` and ``failed_tasks`` (error above 5%, the paper's
  threshold), as Sukhbaatar et al. (2015) report them.

:func:`evaluate_to_dir` writes ``scores.json``, ``predictions.tsv`` (file:line, question,
answer, truth) and ``report.html`` (the hop-by-hop attention of the first questions, the wrong
ones first) for a checkpoint's split.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from attnkit.data.babi import Question, load_splits
from attnkit.data.babi_vectors import BabiVocab, QABatch
from attnkit.errors import DataError
from attnkit.evaluation.summary import default_eval_dir
from attnkit.viz.memory import hops_record

FAILED_ABOVE_PCT = 5.0  # a task is failed when its error is above this (the paper's rule)
REPORTED = 60  # questions drawn in report.html


def predict(model, batch: QABatch, batch_size: int = 1000) -> tuple[torch.Tensor, ...]:
    """(answer ids (N,), summed loss, attention (N, K, M)) of ``model`` on ``batch``, in chunks
    of ``batch_size``, without gradients."""
    was_training = model.training
    model.eval()
    answers, attention, loss = [], [], 0.0
    with torch.no_grad():
        for start in range(0, len(batch), batch_size):
            part = batch.take(torch.arange(start, min(start + batch_size, len(batch))))
            out = model(part.stories, part.counts, part.queries)
            loss += float(F.cross_entropy(out.logits, part.answers, reduction="sum"))
            answers.append(out.logits.argmax(-1))
            attention.append(out.attention)
    model.train(was_training)
    return torch.cat(answers), loss, torch.cat(attention)


def dev_score(model, batch: QABatch, batch_size: int = 1000) -> dict:
    """``{"questions", "error_pct", "loss"}`` of ``model`` on ``batch`` (the training loop's
    validation score)."""
    answers, loss, _ = predict(model, batch, batch_size)
    wrong = int((answers != batch.answers).sum())
    return {
        "questions": len(batch),
        "error_pct": 100.0 * wrong / max(len(batch), 1),
        "loss": loss / max(len(batch), 1),
    }


def support_hits(
    attention: torch.Tensor, supporting: torch.Tensor, counts: torch.Tensor | None = None
) -> torch.Tensor:
    """(N, K) True where hop k's most attended memory is a supporting fact; ``attention``
    (N, K, M), ``supporting`` (N, M). ``counts`` (N,): the facts of each question, the only slots
    that count (a model with ``empty_slots: zero`` also weighs the empty ones)."""
    if counts is not None:
        facts = torch.arange(attention.size(-1), device=counts.device)[None, :] < counts[:, None]
        attention = attention.masked_fill(~facts[:, None, :], -1.0)
    top = attention.argmax(-1)  # (N, K)
    return supporting.gather(1, top)


def task_scores(
    tasks: Sequence[int], right: torch.Tensor, hits: torch.Tensor, has_support: torch.Tensor
) -> dict:
    """The scores of every task and over them; ``right`` (N,), ``hits`` (N, K) and
    ``has_support`` (N,) of questions whose task numbers are ``tasks`` (N,)."""
    task_of = torch.tensor(list(tasks))
    per_task = {}
    for task in sorted(set(tasks)):
        rows = task_of == task
        supported = rows & has_support
        n_sup = int(supported.sum())
        per_hop = hits[supported].float().mean(0) if n_sup else torch.zeros(hits.shape[1])
        every = hits[supported].all(1).float().mean() if n_sup else torch.tensor(0.0)
        per_task[str(task)] = {
            "questions": int(rows.sum()),
            "error_pct": round(100.0 * float((~right[rows]).float().mean()), 2),
            "support_attention_pct": [round(100.0 * float(v), 2) for v in per_hop],
            "support_attention_all_pct": round(100.0 * float(every), 2),
        }
    errors = [t["error_pct"] for t in per_task.values()]
    return {
        "tasks": per_task,
        "mean_error_pct": round(float(np.mean(errors)), 2),
        "failed_tasks": sum(e > FAILED_ABOVE_PCT for e in errors),
        "failed": [t for t, s in per_task.items() if s["error_pct"] > FAILED_ABOVE_PCT],
    }


def score_questions(model, vocab: BabiVocab, questions: list[Question], batch_size: int = 1000):
    """(scores, predicted answers, attention (N, K, M)) of ``model`` on ``questions``."""
    batch = vocab.encode(questions).to(next(model.parameters()).device)
    answers, _, attention = predict(model, batch, batch_size)
    right = (answers == batch.answers).cpu()
    hits = support_hits(attention, batch.supporting, batch.counts).cpu()
    has_support = batch.supporting.any(1).cpu()
    scores = task_scores([q.task for q in questions], right, hits, has_support)
    words = [vocab.tokens[int(a)] for a in answers.cpu()]
    return scores, words, attention.cpu().numpy()


def records(questions: list[Question], answers: list[str], attention: np.ndarray, vocab):
    """The hop-by-hop records of ``questions`` (attention (N, K, M))."""
    out = []
    for i, q in enumerate(questions):
        memories = q.memories[-vocab.memory_size :]
        record = hops_record(
            memories,
            q.question,
            answers[i],
            attention[i][:, : len(memories)],
            q.supporting,
            q.answer,
        )
        record.index = i
        out.append(record)
    return out


def evaluate_to_dir(
    path: Path,
    split: str,
    out: Path | None,
    loaded,
    family: str,
    questions: list[Question] | None = None,
) -> dict:
    """Score checkpoint ``path`` (``loaded``: its (config, vocab, model); ``family``: what its
    meta.json says, recorded in the scores) on ``split`` (test or dev; or ``questions`` of your
    own, ``split`` naming them) and write scores.json, predictions.tsv and report.html to
    ``out`` (default ``RUN/eval/CHECKPOINT-SPLIT``); returns the scores."""
    from attnkit.viz.report import Tally, write_report

    cfg, vocab, model = loaded
    if questions is None:
        questions = load_splits(cfg.data).split(split)
    if not questions:
        raise DataError(f"{split}: no question to score")
    scores, answers, attention = score_questions(model, vocab, questions, cfg.train.eval_batch_size)
    directory = path if (path / "meta.json").is_file() else path / "best"
    # a zoo model's outputs go to runs/zoo/eval, never into the installed package
    out = Path(out) if out is not None else default_eval_dir([directory], split)
    out.mkdir(parents=True, exist_ok=True)
    scores = {
        "family": family,
        "task": str(cfg.data.task),
        "split": split,
        "checkpoint": str(directory),
        "questions": len(questions),
        **scores,
        "out": str(out),
    }
    (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    lines = ["where\tquestion\tanswer\ttruth"]
    lines += [f"{q.where}\t{q.question}\t{a}\t{q.answer}" for q, a in zip(questions, answers)]
    (out / "predictions.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    wrong = [i for i, (q, a) in enumerate(zip(questions, answers)) if a != q.answer]
    chosen = (wrong + [i for i in range(len(questions)) if i not in set(wrong)])[:REPORTED]
    picked = [questions[i] for i in chosen]
    recs = records(picked, [answers[i] for i in chosen], attention[chosen], vocab)
    summary = {k: scores[k] for k in ("mean_error_pct", "failed_tasks", "questions")}
    summary["tasks"] = {t: s["error_pct"] for t, s in scores["tasks"].items()}
    with warnings.catch_warnings():  # the static pictures' long sentence labels squeeze them
        warnings.filterwarnings("ignore", message="constrained_layout not applied")
        write_report(
            out / "report.html",
            f"MemN2N on bAbI task {cfg.data.task} ({split})",
            summary,
            recs,
            cfg.to_dict(),
            notes="Each example: the story's sentences (rows) and where each hop looked "
            "(columns); supporting facts are outlined.",
            map_title="hop-by-hop attention over the story's sentences",
            tally=Tally(len(wrong), len(questions)),
        )
    return scores


def summary_table(scores: dict) -> str:
    """The table ``attnkit evaluate`` prints for a memory network."""
    lines = [f"{'task':>5} {'error %':>8} {'support attention % per hop':>28}"]
    for task, s in scores["tasks"].items():
        hops = " ".join(f"{v:5.1f}" for v in s["support_attention_pct"])
        lines.append(f"{task:>5} {s['error_pct']:8.2f}   {hops}")
    lines.append(
        f"mean error {scores['mean_error_pct']:.2f}%, failed tasks (error > 5%): "
        f"{scores['failed_tasks']}"
    )
    return "\n".join(lines)
