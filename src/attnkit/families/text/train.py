"""Training for the text-classification family.

An experiment file has ``family: text`` (:mod:`attnkit.families.text.config`). :func:`train_text`
(``attnkit train`` calls it) builds the vocabulary from the training split and trains the
:class:`~attnkit.models.text_classifier.TextClassifier` in the training driver
(:mod:`attnkit.training.run`) through :class:`~attnkit.families.text.adapter.TextAdapter`,
keeping ``OUT/best`` (the highest dev accuracy) and ``OUT/last``; ``--resume`` goes on from
``OUT/last``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit.config import apply_overrides
from attnkit.data.tasks.paths import command_line_data_keys
from attnkit.data.tasks.text import TextData, build_vocab
from attnkit.data.vocab import Vocab
from attnkit.families.base import TrainRequest
from attnkit.families.text import bundle as tckpt
from attnkit.families.text.adapter import TextAdapter
from attnkit.families.text.config import TextConfig, parse_config
from attnkit.families.text.scoring import accuracy, predict
from attnkit.training import resumable, resume_config
from attnkit.training.run import Context, Plan, Started, run
from attnkit.training.state import TrainerState

__all__ = ["train_text"]


def train_text(
    config: dict,
    output_dir: Path | None = None,
    resume: bool = False,
    source: str = "config",
    overwrite: bool = False,
    overrides: Sequence[str] | None = None,
    config_dir: str | Path | None = None,
) -> Path:
    """Train the model of ``config`` (the parsed YAML, ``overrides`` applied: ``--set``); returns
    the best checkpoint's directory, ``OUT/best``, where OUT is ``output_dir`` or the config's.

    ``resume=True`` goes on from ``OUT/last`` with the config saved there (the keys
    ``overrides`` name taken from ``config``, where a resumed run can honour them); a fresh run
    refuses an OUT holding checkpoints unless ``overwrite``. SIGINT/SIGTERM save ``OUT/last``
    after the current update and raise TrainingInterrupted.
    """
    command_line = command_line_data_keys(overrides or ())
    cfg = parse_config(apply_overrides(config, overrides or ()), source, config_dir, command_line)
    out = Path(output_dir) if output_dir is not None else Path(cfg.output_dir)
    if resume:
        cfg = resumable.config_to_resume(
            cfg, out / "last", overrides or (), source, parse_config, resume_config.TEXT
        )
    plan = Plan(out, cfg.train, "sentences", resume, overwrite, source)
    return run(plan, lambda context: _start(cfg, context))


def _start(cfg: TextConfig, context: Context) -> Started:
    """The vocabulary (the training split's, or ``last``'s), the model and optimizer (fresh, or
    ``last``'s) and the adapter."""
    t_cfg, out, device = cfg.train, context.plan.out, context.device
    data = TextData(cfg.data)
    train, dev = data.split("train"), data.split("dev")
    if context.plan.resume:
        vocab = Vocab.load(out / "last" / tckpt.VOCAB_FILE)
    else:
        vocab = build_vocab(train, cfg.model.min_freq, cfg.model.max_vocab)
    bundle = tckpt.TextBundle(cfg, vocab, data.labels, None)
    bundle.model = tckpt.build_model(cfg, vocab, data.labels).to(device)
    optimizer = torch.optim.Adam(
        bundle.model.parameters(), lr=t_cfg.lr, weight_decay=t_cfg.weight_decay
    )
    state = TrainerState(planned_epochs=t_cfg.epochs)
    if context.plan.resume:
        state = tckpt.restore(out / "last", bundle.model, optimizer)
        state.stopped, state.planned_epochs = "", t_cfg.epochs
    parameters = sum(p.numel() for p in bundle.model.parameters())
    context.log(
        f"training {cfg.model.encoder} + {cfg.model.attention} attention on {data.describe()} "
        f"({device}), {len(vocab):,} words, {parameters:,} parameters"
    )
    dev_words, dev_labels = [e.words for e in dev], [e.label for e in dev]

    def dev_score() -> dict:
        answers = predict(bundle.model, dev_words, vocab, t_cfg.eval_batch_size)
        return {"sentences": len(dev), "accuracy": accuracy(answers, dev_labels)}

    return Started(TextAdapter(bundle, out, optimizer, train, dev, dev_score, context.log), state)


def train(data: dict, request: TrainRequest) -> Path:
    """``attnkit.train`` of a text-classification experiment: its best checkpoint."""
    return train_text(data, **request.run_options(), config_dir=request.config_dir)
