"""The train: keys, defined once (attnkit.train_config), and each family's column in its own
folder: each family's section has exactly the keys (in the order) its checkpoints have always
saved, with its own defaults and choices."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
from pathlib import Path

import pytest

from attnkit.config import from_dict, read_yaml, to_dict
from attnkit.errors import ConfigError
from attnkit.families.seq2seq.config import TrainConfig as Seq2SeqTrain
from attnkit.families.vision.config import TrainConfig as VisionTrain
from attnkit.train_config import KEYS, Row, train_config_class

OLD = Path(__file__).resolve().parents[1] / "data" / "checkpoints_5afbdd1"


#: train: keys added since those checkpoints were written (every family prints its lines alike)
ADDED_SINCE = {"rnn-bahdanau": ["precision", "verbose"], "vision-ram": []}


@pytest.mark.parametrize(
    "cls, checkpoint", [(Seq2SeqTrain, "rnn-bahdanau"), (VisionTrain, "vision-ram")]
)
def test_each_family_saves_the_keys_of_its_old_checkpoints_in_their_order(cls, checkpoint):
    saved = read_yaml(OLD / checkpoint / "best" / "config.yaml")["train"]
    added = ADDED_SINCE[checkpoint]
    assert [key for key in to_dict(cls()) if key not in added] == list(saved)
    again = to_dict(from_dict(cls, saved, "old"))  # read back: the old values, the new defaults
    assert {k: v for k, v in again.items() if k not in added} == saved
    assert {k: again[k] for k in added} == {k: getattr(cls(), k) for k in added}


def test_each_family_has_its_own_defaults():
    # the defaults of the two sections before they were defined in one table
    seq2seq, vision = Seq2SeqTrain(), VisionTrain()
    assert (seq2seq.epochs, seq2seq.batch_size, seq2seq.clip, seq2seq.seed) == (30, 64, 1.0, 1)
    assert (vision.epochs, vision.batch_size, vision.clip, vision.seed) == (50, 128, 5.0, 0)
    assert (seq2seq.scheduler, seq2seq.patience, seq2seq.threads) == ("plateau", 5, 0)
    assert (vision.scheduler, vision.patience, vision.threads) == ("cosine", 20, None)


def test_a_key_of_the_other_family_is_refused_with_the_valid_ones():
    with pytest.raises(ConfigError, match=r"x: unknown key 'weight_decay'; valid keys: epochs, "):
        from_dict(Seq2SeqTrain, {"weight_decay": 0.1}, "x")
    with pytest.raises(ConfigError, match=r"unknown key 'label_smoothing'; valid keys: .*verbose"):
        from_dict(VisionTrain, {"label_smoothing": 0.1}, "x")


def test_choices_and_rules_are_the_family_s():
    assert from_dict(VisionTrain, {"scheduler": "step"}, "x").scheduler == "step"
    with pytest.raises(ConfigError, match="'step' is not one of plateau, cosine"):
        from_dict(Seq2SeqTrain, {"scheduler": "step"}, "x")
    assert from_dict(Seq2SeqTrain, {"batch_size": None, "max_tokens": 500}, "x").batch_size is None
    with pytest.raises(ConfigError, match="set batch_size or max_tokens"):
        from_dict(Seq2SeqTrain, {"batch_size": None}, "x")
    with pytest.raises(ConfigError, match=r"x: batch_size"):
        from_dict(VisionTrain, {"batch_size": None}, "x")
    with pytest.raises(ConfigError, match=r"x: lr: must be a finite number > 0, got -1"):
        from_dict(VisionTrain, {"lr": -1.0}, "x")


#: where each family's train column (TRAIN_KEYS, TRAIN_CHOICES) and TrainConfig live
CONFIG_MODULES = {
    "seq2seq": "attnkit.families.seq2seq.config",
    "vision": "attnkit.families.vision.config",
    "text": "attnkit.families.text.config",
    "graph": "attnkit.families.graph.config",
    "memnet": "attnkit.families.memnet.config",
    "pointer": "attnkit.families.pointer.config",
}


@pytest.mark.parametrize("family", sorted(CONFIG_MODULES))
def test_a_family_s_fields_are_its_column_in_the_order_of_the_keys(family):
    module = importlib.import_module(CONFIG_MODULES[family])
    cls, column = module.TrainConfig, module.TRAIN_KEYS
    assert [f.name for f in dataclasses.fields(cls)] == [k for k in KEYS if k in column]
    assert set(cls.DOCS) == set(column) and cls.FAMILY == family
    assert cls.__module__ == CONFIG_MODULES[family]


def test_every_key_is_some_family_s():
    used = set()
    for name in CONFIG_MODULES.values():
        used |= set(importlib.import_module(name).TRAIN_KEYS)
    assert used == set(KEYS)


def test_a_column_s_own_order_does_not_change_the_saved_order():
    column = {"seed": Row(7), "epochs": Row(3, "passes"), "clip": Row(None)}
    cls = train_config_class("toy", column, {}, __name__)
    assert list(to_dict(cls())) == ["epochs", "clip", "seed"]  # KEYS's order
    assert cls.DOCS == {
        "epochs": "passes",
        "clip": KEYS["clip"].meaning,
        "seed": KEYS["seed"].meaning,
    }
    assert set(cls.RULES) == {"epochs", "clip", "seed"}
    with pytest.raises(ConfigError, match=r"x: seed: must be a whole number in \[0, 4294967295\]"):
        from_dict(cls, {"seed": -1}, "x")


def test_a_column_with_an_unknown_key_or_choice_is_refused():
    with pytest.raises(ValueError, match="toy: epoch: no such train key"):
        train_config_class("toy", {"epoch": Row(3)}, {}, __name__)
    with pytest.raises(ValueError, match="toy: choices of device, a key its column lacks"):
        train_config_class("toy", {"epochs": Row(3)}, {"device": ("cpu",)}, __name__)


def test_a_config_pickles_as_the_class_its_module_publishes():
    config = VisionTrain(lr=0.01)
    assert pickle.loads(pickle.dumps(config)) == config
    assert VisionTrain().compiled is False and VisionTrain(backend="compile").compiled
