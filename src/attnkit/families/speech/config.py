"""The experiment file of the speech family.

::

    family: speech
    output_dir: runs/speech_numbers_las           -> where best/ and last/ go
    data:  {languages: [en, de], max_number: 999} -> SpeechData (attnkit.data.tasks.speech_set)
    model: {kind: las, attention: location, ...}  -> LASConfig (attnkit.models.las; kind: ctc
                                                     -> attnkit.models.ctc, no attention; kind:
                                                     transformer -> .speech_transformer)
    train: {epochs: 30, batch_size: 32, ...}      -> TrainConfig

Unknown keys anywhere are rejected with the valid ones listed. The ``train`` keys are those of
:data:`attnkit.train_config.KEYS` that :data:`TRAIN_KEYS` lists, with this family's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.config import family_dict, family_output_dir, from_dict
from attnkit.data.tasks.speech_set import SpeechData
from attnkit.families.base import ConfigSummary
from attnkit.models.las import LASConfig
from attnkit.train_config import Row, train_config_class

FAMILY = "speech"

#: the ``train:`` keys of a speech experiment: each one's default here, and what it means here
#: where that differs from the key's general meaning
TRAIN_KEYS: dict[str, Row] = {
    "epochs": Row(30, "most passes over the training utterances"),
    "batch_size": Row(32, "utterances per update"),
    "eval_batch_size": Row(100, "utterances per forward pass when scoring dev/test"),
    "lr": Row(1e-3, "Adam learning rate (constant after any warm-up)"),
    "clip": Row(5.0, "gradient-norm clipping (0 or null = off)"),
    "max_bad_updates": Row(
        20,
        "updates with a NaN/inf loss or gradient norm are skipped; this many in a row stop the run",
    ),
    "warmup_steps": Row(
        0,
        "Linear warm-up of the rate from lr / warmup_steps to lr over this many updates, then "
        "lr (0: none).",
    ),
    "patience": Row(
        5, "early stopping: evaluations without a better dev exact match (null: never)"
    ),
    "eval_every": Row(0),
    "max_minutes": Row(None, "time budget for training (null: none)"),
    "seed": Row(1, "seed of the initialisation and the batch order"),
    "device": Row("auto", "auto | cpu | cuda"),
    "threads": Row(0, "torch CPU threads (0 or null = torch's default)"),
    "progress": Row(True),
    "verbose": Row(True),
    "tensorboard": Row(True, "event files in run_dir/tensorboard: loss, accuracy, dev metrics"),
}
#: the values a train key takes, where they are a list
TRAIN_CHOICES = {"device": ("auto", "cpu", "cuda")}

TrainConfig = train_config_class(FAMILY, TRAIN_KEYS, TRAIN_CHOICES, __name__)


@dataclass
class SpeechExperiment:
    data: SpeechData
    model: LASConfig
    train: TrainConfig
    output_dir: str = "runs/speech"  # run directory (best/ and last/) when the caller gives none

    def to_dict(self) -> dict:
        return family_dict(
            FAMILY, self.output_dir, data=self.data, model=self.model, train=self.train
        )


def parse_config(data: dict, source: str = "config") -> SpeechExperiment:
    """A parsed YAML mapping -> :class:`SpeechExperiment`; ConfigError naming ``source`` and the
    key."""
    output_dir = family_output_dir(data, source, FAMILY, SpeechExperiment.output_dir)
    return SpeechExperiment(
        data=from_dict(SpeechData, data.get("data"), f"{source}: data"),
        model=from_dict(LASConfig, data.get("model"), f"{source}: model"),
        train=from_dict(TrainConfig, data.get("train"), f"{source}: train"),
        output_dir=output_dir,
    )


def describe(data: dict) -> ConfigSummary:
    """A speech experiment's task and its model's attention."""
    model = data.get("model") or {}
    if not isinstance(model, dict):
        return ConfigSummary("spoken numbers", "?")
    if model.get("kind", LASConfig.kind) == "ctc":
        return ConfigSummary("spoken numbers", "CTC over the listener's frames (no attention)")
    if model.get("kind") == "transformer":
        return ConfigSummary("spoken numbers", "Transformer over frames (cross-attention)")
    attention = model.get("attention", LASConfig.attention)
    return ConfigSummary("spoken numbers", f"listen, attend and spell ({attention} attention)")
