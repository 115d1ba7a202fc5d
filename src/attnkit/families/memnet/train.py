"""Training for the memory-network family (end-to-end memory networks on bAbI).

An experiment file has ``family: memnet`` (:mod:`attnkit.families.memnet.config`).
:func:`train_memnet` (``attnkit train`` and ``attnkit.train`` call it) reads the task's
questions, holds ``data.valid_fraction`` of the training ones out for validation, builds the
vocabulary of the rest, and trains in the training driver (:mod:`attnkit.training.run`) with the
family's adapter (:mod:`attnkit.families.memnet.adapter`), keeping ``OUT/best`` (lowest
validation error) and ``OUT/last``.
:func:`attnkit.families.memnet.bundle.load_memnet_model` reads a checkpoint back.

The validation scorer is handed in (``dev_scorer(model, batch, eval_batch_size) -> dict``):
``training/`` imports nothing of ``evaluation/``. ``--resume`` goes on from ``OUT/last`` (the
weights, the vocabulary, the optimizer, torch's RNG and the random-noise stream, the counters;
:mod:`attnkit.training.resumable`), with the config saved there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from attnkit.config import apply_overrides
from attnkit.data.babi import load_splits
from attnkit.data.babi_vectors import BabiVocab
from attnkit.families.base import TrainRequest
from attnkit.families.memnet.adapter import MemnetAdapter
from attnkit.families.memnet.bundle import read_vocab
from attnkit.families.memnet.config import FAMILY, MemnetConfig, parse_config
from attnkit.models.memn2n import MemN2N
from attnkit.training import resumable
from attnkit.training.resume_config import MEMNET
from attnkit.training.run import Context, Plan, Started, run
from attnkit.training.state import TrainerState

__all__ = ["train", "train_memnet"]


def train_memnet(
    config: dict,
    dev_scorer: Callable,
    output_dir: Path | None = None,
    resume: bool = False,
    source: str = "config",
    overwrite: bool = False,
    overrides: Sequence[str] | None = None,
) -> Path:
    """Train the memory network of ``config`` (the parsed YAML, ``overrides`` applied: the
    command line's ``--set KEY=VALUE``); returns the best checkpoint directory.

    ``resume=True`` goes on from ``OUT/last`` with the config saved there (the keys
    ``overrides`` name taken from ``config``, where a resumed run can honour them); a fresh run
    refuses an OUT holding checkpoints unless ``overwrite``. SIGINT/SIGTERM save ``OUT/last``
    after the current update and raise TrainingInterrupted."""
    cfg = parse_config(apply_overrides(config, overrides or ()), source)
    out = Path(output_dir) if output_dir is not None else Path(cfg.output_dir)
    if resume:
        cfg = resumable.config_to_resume(
            cfg, out / "last", overrides or (), source, parse_config, MEMNET
        )
    plan = Plan(out, cfg.train, "questions", resume, overwrite, source)
    return run(plan, lambda context: _start(cfg, dev_scorer, context))


def _start(cfg: MemnetConfig, dev_scorer: Callable, context: Context) -> Started:
    """The questions and vocabulary (the training questions', or ``last``'s), the model and the
    adapter; ``last``'s weights, optimizer and noise stream where the run resumes."""
    t_cfg, out, device = cfg.train, context.plan.out, context.device
    splits = load_splits(cfg.data)
    if context.plan.resume:  # the run's own words: its answers' ids are the vocabulary's
        vocab = read_vocab(out / "last", cfg)
    else:
        vocab = BabiVocab.build(splits.train, cfg.data.memory_size)
    train, valid = vocab.encode(splits.train).to(device), vocab.encode(splits.valid).to(device)
    model = MemN2N(cfg.model, len(vocab), cfg.data.memory_size).to(device)
    parameters = sum(p.numel() for p in model.parameters())
    context.log(
        f"training MemN2N ({cfg.model.hops} hops, {cfg.model.memory}, {cfg.model.encoding}) on "
        f"bAbI task {cfg.data.task} ({device}), {parameters:,} parameters, {len(vocab)} words, "
        f"{len(train)} training and {len(valid)} validation questions"
    )

    def pictures():
        from attnkit.viz.memory import hops_figure

        with torch.no_grad():
            model.eval()
            out_ = model(valid.stories[:1], valid.counts[:1], valid.queries[:1])
        question = splits.valid[0]
        weights = out_.attention[0, :, : len(question.memories[-cfg.data.memory_size :])]
        return [("hops", hops_figure(question, weights.cpu().numpy(), vocab))]

    adapter = MemnetAdapter(
        cfg,
        out,
        model,
        vocab,
        train,
        lambda: dev_scorer(model, valid, t_cfg.eval_batch_size),
        pictures,
    )
    state = TrainerState(planned_epochs=t_cfg.epochs)
    if context.plan.resume:
        state = resumable.restore(
            out / "last", FAMILY, model, adapter.optimizer, {"noise": adapter.noise}
        )
        state.stopped, state.planned_epochs = "", t_cfg.epochs
    return Started(adapter, state)


def train(data: dict, request: TrainRequest) -> Path:
    """``attnkit.train`` of a memory-network (bAbI) experiment: its best checkpoint."""
    from attnkit.evaluation.babi import dev_score

    # the dev scorer is handed in: the loop scores dev through bAbI's evaluation
    return train_memnet(data, dev_score, **request.run_options())
