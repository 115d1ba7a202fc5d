"""The config a resumed run goes on with: the run's own, changed only where asked and possible."""

from pathlib import Path

import pytest

from attnkit.errors import ConfigError
from attnkit.training import resume_config as rc

LAST = Path("runs/x/last")


def _saved():
    return {
        "name": "x",
        "output_dir": None,
        "model": {"decoder_hidden": 24, "channels": [4, 8]},
        "data": {"task": "parallel", "train": "/data/train.tsv"},
        "train": {"epochs": 10, "lr": 0.0003, "patience": 5, "max_minutes": None},
        "decode": {"beam_size": 5, "alpha": 1.0},
    }


def _with(data, **dotted):
    """A copy of ``data`` with ``section__key=value`` changes."""
    import copy

    data = copy.deepcopy(data)
    for key, value in dotted.items():
        section, name = key.split("__")
        data[section][name] = value
    return data


def test_differences_are_the_leaves_that_differ_without_the_locating_keys():
    asked = _with(_saved(), train__epochs=20, model__channels=[4, 16])
    asked["output_dir"], asked["name"] = "elsewhere", "y"
    found = rc.differences(_saved(), asked, rc.SEQ2SEQ)
    assert [(d.key, d.saved, d.asked) for d in found] == [
        ("model.channels", [4, 8], [4, 16]),
        ("train.epochs", 10, 20),
    ]
    # numbers equal to rounding (an earlier version's translated key) are the same
    close = _with(_saved(), train__lr=0.0003 * (1 + 1e-12))
    assert rc.differences(_saved(), close, rc.SEQ2SEQ) == []
    # a key only one side has differs; an integer and a float of one value do not
    extra = _with(_saved(), train__new=True, train__patience=5.0)
    (only,) = rc.differences(_saved(), extra, rc.SEQ2SEQ)
    assert (only.key, only.saved, only.asked) == ("train.new", rc.MISSING, True)


def test_request_keeps_the_runs_values_and_takes_only_what_the_sets_name(capsys):
    # CONFIG without the first run's --sets (decoder_hidden 16, lr 0.001), with a new epochs
    asked = _with(_saved(), model__decoder_hidden=16, train__lr=0.001, train__epochs=20)
    asked["output_dir"] = "moved/run"
    merged, note = rc.request(_saved(), asked, ["train.epochs=20"], rc.SEQ2SEQ, LAST, "exp.yaml")
    assert merged["model"]["decoder_hidden"] == 24 and merged["train"]["lr"] == 0.0003
    assert merged["train"]["epochs"] == 20
    assert merged["output_dir"] == "moved/run"  # the run is where this call found it
    assert "exp.yaml differs in model.decoder_hidden, train.lr" in note
    assert "train.epochs" not in note
    # the same CONFIG with no --set: the run's config as saved, and the note
    merged, note = rc.request(_saved(), _with(_saved(), train__lr=0.1), [], rc.SEQ2SEQ, LAST, "e")
    assert merged == _saved() and "e differs in train.lr" in note
    assert rc.request(_saved(), _saved(), [], rc.SEQ2SEQ, LAST, "e") == (_saved(), None)


@pytest.mark.parametrize(
    "key, value, shown",
    [
        ("model.decoder_hidden", 32, "model.decoder_hidden (24 in the run, 32 asked)"),
        ("train.lr", 0.1, "train.lr (0.0003 in the run, 0.1 asked)"),
        ("data.train", "/new.tsv", "data.train (/data/train.tsv in the run, /new.tsv asked)"),
    ],
)
def test_a_set_resume_cannot_honour_is_one_line_naming_key_values_and_what_to_do(key, value, shown):
    section, name = key.split(".")
    asked = _with(_saved(), **{f"{section}__{name}": value})
    with pytest.raises(ConfigError) as err:
        rc.request(_saved(), asked, [f"{key}={value}"], rc.SEQ2SEQ, LAST, "exp.yaml")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{LAST}: a resumed run cannot change ")
    assert shown in message
    assert f"leave out --set {key}" in message and "--overwrite" in message
    assert "train.epochs" in message  # what resume can change


def test_changes_lists_each_honoured_change_and_refuses_the_rest():
    asked = _with(_saved(), train__epochs=20, train__max_minutes=30, decode__alpha=0.6)
    assert rc.changes(_saved(), asked, rc.SEQ2SEQ, LAST) == [
        "resume: train.epochs 10 -> 20",
        "resume: train.max_minutes null -> 30",
        "resume: decode.alpha 1.0 -> 0.6",
    ]
    assert rc.changes(_saved(), _saved(), rc.SEQ2SEQ, LAST) == []
    with pytest.raises(ConfigError, match=r"train.lr \(0.0003 in the run, 0.001 asked\): set it "):
        rc.changes(_saved(), _with(_saved(), train__lr=0.001), rc.SEQ2SEQ, LAST)


def test_vision_rules_differ_from_seq2seq_ones():
    saved = {"output_dir": "a", "train": {"fit_schedule_to_budget": True, "eval_every": 0}}
    asked = {"output_dir": "b", "train": {"fit_schedule_to_budget": False, "eval_every": 0}}
    line = "resume: train.fit_schedule_to_budget true -> false"
    assert rc.changes(saved, asked, rc.VISION, LAST) == [line]
    with pytest.raises(ConfigError, match="cannot change train.fit_schedule_to_budget"):
        rc.changes(saved, asked, rc.SEQ2SEQ, LAST)


def test_set_keys_read_as_the_overrides_are_applied():
    assert rc.set_keys(["train.epochs=3", " model..hidden =4", "decode=x=y"]) == {
        "train.epochs",
        "model.hidden",
        "decode",
    }
