"""Training a seq2seq experiment (an RNN with any attention, or a Transformer) from
``attnkit.train``: the experiment file read as the seq2seq config, the dev scorer handed in."""

from __future__ import annotations

import sys
from pathlib import Path

from attnkit.families.base import ConfigSummary, TrainRequest, describe_experiment


def train(data: dict, request: TrainRequest) -> Path:
    """``attnkit.train`` of a seq2seq experiment: its best checkpoint. ``resume`` continues with
    the run's own config, changed where the request's overrides ask."""
    from attnkit.families.seq2seq.config import experiment_from_dict
    from attnkit.families.seq2seq.evaluate import evaluate_translator
    from attnkit.families.seq2seq.trainer import train_experiment

    source = str(request.config)
    cfg = experiment_from_dict(
        data, request.overrides, source=source, user=True, config_dir=request.config.parent
    )
    if request.output_dir is not None:  # a path, never parsed as YAML
        cfg.output_dir = str(request.output_dir)
    if request.resume:
        from attnkit.families.seq2seq.setup import config_to_resume
        from attnkit.training.distributed import rank

        cfg, note = config_to_resume(cfg, request.overrides, source)
        if note and rank() == 0:
            print(note, file=sys.stderr)  # beside the run's lines
    return train_experiment(
        cfg, resume=request.resume, overwrite=request.overwrite, dev_scorer=evaluate_translator
    )


def describe(data: dict) -> ConfigSummary:
    """A seq2seq experiment's task and model: a Transformer, else its attention (Bahdanau's
    where the file names none)."""
    found = describe_experiment(data)
    return ConfigSummary(found.task, found.model or "bahdanau")
