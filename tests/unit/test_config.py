"""Experiment config: unknown keys, types and choices rejected with file and key named; --set
overrides."""

import dataclasses
import importlib
import re
from pathlib import Path

import pytest
import yaml

from attnkit.config import apply_overrides, from_dict, read_yaml
from attnkit.data.tasks import settings
from attnkit.data.tasks.registry import (
    PARALLEL_METRICS,
    TASK_REGISTRY,
    Metric,
    data_from_dict,
    task_entry,
    task_metric,
)
from attnkit.data.tasks.settings import FLAT_DEFAULTS, NumbersData
from attnkit.errors import AttnkitError, ConfigError
from attnkit.families.seq2seq.config import (
    DecodeConfig,
    ExperimentConfig,
    TrainConfig,
    experiment_from_dict,
    experiment_to_dict,
    load_experiment,
)
from attnkit.models.seq2seq import Seq2SeqConfig


def _write(tmp_path, data, name="exp.yaml"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def _error(tmp_path, data, overrides=()) -> str:
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_experiment(path, overrides)
    assert isinstance(err.value, AttnkitError)
    msg = str(err.value)
    assert str(path) in msg, msg
    return msg


def _valid_keys(cls):
    return [f.name for f in dataclasses.fields(cls)]


def test_defaults_and_a_full_round_trip(tmp_path):
    cfg = load_experiment(
        _write(
            tmp_path,
            {"name": "x", "data": {"task": "numbers"}, "model": {"attention": "luong-general"}},
        )
    )
    assert isinstance(cfg, ExperimentConfig)
    assert cfg.name == "x" and cfg.model.attention == "luong-general" and cfg.model.rnn == "gru"
    assert cfg.train == TrainConfig() and cfg.decode == DecodeConfig()
    # what a checkpoint stores: every key, those the settings ignore included
    again = experiment_from_dict(read_yaml(_write(tmp_path, experiment_to_dict(cfg), "again.yaml")))
    assert again == cfg


def test_empty_mapping_gives_defaults():
    expected = ExperimentConfig()
    # read as a checkpoint's saved config, a data section without normalize predates the key
    expected.data.normalize = "none"
    assert experiment_from_dict({}) == expected


@pytest.mark.parametrize("text", ["", "name: x\n", "name: x\ndata: {seed: 3}\n"])
def test_experiment_file_must_name_its_task(tmp_path, text):
    # without data.task a file used to train the numbers task silently
    msg = _error(tmp_path, text)
    assert "data.task" in msg and "numbers" in msg and "dates" in msg
    cfg = load_experiment(_write(tmp_path, text, "set.yaml"), ["data.task=dates"])
    assert cfg.data.task == "dates"


def test_unknown_top_level_key(tmp_path):
    msg = _error(tmp_path, {"name": "x", "modle": {}})
    assert "'modle'" in msg
    for key in _valid_keys(ExperimentConfig):
        assert key in msg


@pytest.mark.parametrize(
    "section, cls",
    [
        ("data", NumbersData),
        ("model", Seq2SeqConfig),
        ("train", TrainConfig),
        ("decode", DecodeConfig),
    ],
)
def test_unknown_key_in_each_section(tmp_path, section, cls):
    given = {"task": "numbers"} if section == "data" else {}
    msg = _error(tmp_path, {section: {**given, "hiden": 3}})
    assert "'hiden'" in msg and section in msg
    for key in _valid_keys(cls):
        assert key in msg


def test_several_unknown_keys_are_all_named(tmp_path):
    msg = _error(tmp_path, {"model": {"foo": 1, "bar": 2}})
    assert "'foo'" in msg and "'bar'" in msg


@pytest.mark.parametrize(
    "data, key",
    [
        ({"model": {"decoder_hidden": "big"}}, "model.decoder_hidden"),
        ({"model": {"decoder_hidden": 2.5}}, "model.decoder_hidden"),
        ({"model": {"decoder_hidden": True}}, "model.decoder_hidden"),
        ({"model": {"bidirectional": "yes please"}}, "model.bidirectional"),
        ({"model": {"bidirectional": 1}}, "model.bidirectional"),
        ({"train": {"lr": "fast"}}, "train.lr"),
        ({"train": {"lr": True}}, "train.lr"),
        ({"data": {"task": "numbers", "languages": "en"}}, "data.languages"),
        ({"data": {"task": "numbers", "languages": ["en", 3]}}, "data.languages[1]"),
        ({"data": {"task": "parallel", "train": 5}}, "data.train"),
        ({"data": {"task": ["numbers"]}}, "data.task"),
        ({"name": 7}, "name"),
        ({"model": ["not", "a", "mapping"]}, "model"),
    ],
)
def test_bad_types(tmp_path, data, key):
    msg = _error(tmp_path, data)
    assert key in msg


@pytest.mark.parametrize(
    "data, key, bad",
    [
        ({"model": {"attention": "euclidean"}}, "model.attention", "euclidean"),
        ({"model": {"rnn": "transformer"}}, "model.rnn", "transformer"),
        ({"model": {"decoder": "joey"}}, "model.decoder", "joey"),
        ({"train": {"scheduler": "linear"}}, "train.scheduler", "linear"),
        ({"train": {"device": "tpu"}}, "train.device", "tpu"),
        ({"data": {"task": "numbers", "overlong": "ignore"}}, "data.overlong", "ignore"),
        ({"data": {"task": "dates", "src_level": "byte"}}, "data.src_level", "byte"),
        ({"data": {"task": "numbers", "direction": "up"}}, "data.direction", "up"),
        ({"data": {"task": "numbers", "languages": ["en", "xx"]}}, "data.languages[1]", "xx"),
        ({"data": {"task": "multi30k", "src_lang": "cs"}}, "data.src_lang", "cs"),
        ({"family": "vision2"}, "family", "vision2"),
    ],
)
def test_bad_choices_list_the_valid_ones(tmp_path, data, key, bad):
    msg = _error(tmp_path, data)
    assert key in msg and bad in msg


def test_bad_attention_choice_lists_every_attention(tmp_path):
    msg = _error(tmp_path, {"model": {"attention": "euclidean"}})
    for name in (
        "bahdanau",
        "luong-dot",
        "luong-general",
        "luong-concat",
        "luong-location",
        "local-m",
        "local-p",
        "cosine",
        "scaled-dot",
        "multihead",
        "none",
    ):
        assert name in msg


@pytest.mark.parametrize(
    "data, key",
    [
        ({"model": {"dropout": 1.0}}, "model.dropout"),
        ({"model": {"heads": 0}}, "model.heads"),
        ({"train": {"epochs": 0}}, "train.epochs"),
        ({"train": {"label_smoothing": 1.5}}, "train.label_smoothing"),
        ({"data": {"task": "numbers", "max_src_len": 0}}, "data.max_src_len"),
        ({"data": {"task": "numbers", "languages": []}}, "data.languages"),
        ({"data": {"task": "dates", "dev_size": 0}}, "data.dev_size"),
        ({"data": {"task": "g2p", "directory": "d", "vocab_size": 0}}, "data.vocab_size"),
        (
            {"data": {"task": "multi30k", "directory": "d", "src_lang": "en"}},
            "data.tgt_lang",
        ),
        ({"decode": {"beam_size": 2, "n_best": 3}}, "decode"),
        ({"train": {"batch_size": None}}, "batch_size"),
        ({"train": {"max_bad_updates": 0}}, "train.max_bad_updates"),
        ({"train": {"patience": 0}}, "train.patience"),
        ({"train": {"backend": "fast"}}, "train.backend"),
        ({"decode": {"backend": "fast"}}, "decode.backend"),
    ],
)
def test_bad_values(tmp_path, data, key):
    assert key in _error(tmp_path, data)


@pytest.mark.parametrize("src, tgt", [("de", "fr"), ("fr", "de")])
def test_multi30k_refuses_german_french_naming_the_pairs(tmp_path, src, tgt):
    msg = _error(tmp_path, {"data": {"task": "multi30k", "src_lang": src, "tgt_lang": tgt}})
    assert "data.tgt_lang" in msg and "en<->de, en<->fr" in msg and "\n" not in msg


@pytest.mark.parametrize("src, tgt", [("en", "fr"), ("fr", "en"), ("de", "en"), ("en", "de")])
def test_multi30k_accepts_the_aligned_pairs(tmp_path, src, tgt):
    data = {"task": "multi30k", "directory": "d", "src_lang": src, "tgt_lang": tgt}
    cfg = load_experiment(_write(tmp_path, {"data": data}))
    assert (cfg.data.src_lang, cfg.data.tgt_lang) == (src, tgt)


@pytest.mark.parametrize(
    "given, overrides, n",
    [
        ({"processes": 2}, (), "2"),
        ({}, ("train.processes=4",), "4"),
        ({"processes": 0}, (), "N"),
    ],
)
def test_processes_above_one_name_torchrun(tmp_path, given, overrides, n):
    msg = _error(tmp_path, {"data": {"task": "numbers"}, "train": given}, overrides)
    assert "train.processes" in msg
    assert f"torchrun --nproc_per_node {n} -m attnkit train" in msg


def test_processes_one_still_loads_and_is_not_saved(tmp_path):
    cfg = load_experiment(
        _write(tmp_path, {"data": {"task": "numbers"}, "train": {"processes": 1}})
    )
    assert "processes" not in experiment_to_dict(cfg)["train"]
    assert not hasattr(cfg.train, "processes")


def test_a_checkpoint_saved_with_processes_still_loads():
    """Checkpoints of runs with train.processes: 2 hold it in their config.yaml."""
    saved = experiment_to_dict(ExperimentConfig())
    saved["train"]["processes"] = 2
    assert experiment_from_dict(saved, source="run/last/config.yaml") == ExperimentConfig()


def test_unknown_task(tmp_path):
    msg = _error(tmp_path, {"data": {"task": "poetry"}})
    assert "data.task" in msg and "poetry" in msg
    for task in ("numbers", "dates", "parallel", "g2p", "multi30k"):
        assert task in msg
    with pytest.raises(ConfigError, match="poetry"):
        task_entry("poetry")


def test_parallel_task_without_files(tmp_path):
    msg = _error(tmp_path, {"data": {"task": "parallel", "train": "a.tsv"}})
    assert "parallel" in msg and "data.train" in msg and "data.dev" in msg and "data.test" in msg


def test_parallel_task_with_files_and_file_pairs(tmp_path):
    cfg = load_experiment(
        _write(
            tmp_path,
            {
                "data": {
                    "task": "parallel",
                    "train": "t.tsv",
                    "dev": ["d.src", "d.tgt"],
                    "test": "x.tsv",
                }
            },
        )
    )
    # relative paths are read from the experiment file's directory, and kept absolute
    assert cfg.data.train == str(tmp_path / "t.tsv")
    assert cfg.data.dev == [str(tmp_path / "d.src"), str(tmp_path / "d.tgt")]


def test_g2p_without_a_directory_reads_the_default_location(tmp_path):
    """No data.directory: $ATTNKIT_DATA_DIR/cmudict or the user cache (test_data_location.py)."""
    cfg = load_experiment(_write(tmp_path, {"data": {"task": "g2p"}}))
    assert cfg.data.directory is None and cfg.data.download is False
    assert "data.directory" in _error(tmp_path, {"data": {"task": "g2p", "directory": [1]}})


# ---- --set overrides -----------------------------------------------------------------------------
def test_overrides_nested_floats_lists_and_bools(tmp_path):
    path = _write(tmp_path, {"data": {"task": "numbers"}, "model": {"decoder_hidden": 64}})
    cfg = load_experiment(
        path,
        [
            "model.decoder_hidden=32",
            "train.lr=3e-4",
            "train.min_lr=1.0e-6",
            "data.languages=[en, de]",
            "model.bidirectional=false",
            "name=run 2",
            "train.max_minutes=1.5",
            "output_dir=out/dir",
        ],
    )
    assert cfg.model.decoder_hidden == 32
    assert cfg.train.lr == pytest.approx(3e-4) and isinstance(cfg.train.lr, float)
    assert cfg.train.min_lr == pytest.approx(1e-6)
    assert cfg.data.languages == ["en", "de"]
    assert cfg.model.bidirectional is False
    assert cfg.name == "run 2"
    assert cfg.train.max_minutes == 1.5
    assert cfg.output_dir == "out/dir"


def test_override_later_wins_and_null_resets():
    cfg = experiment_from_dict(
        {}, ["train.epochs=3", "train.epochs=4", "train.max_tokens=500", "train.batch_size=null"]
    )
    assert cfg.train.epochs == 4 and cfg.train.batch_size is None and cfg.train.max_tokens == 500


def test_override_value_with_equals_sign():
    assert experiment_from_dict({}, ["name=a=b"]).name == "a=b"


def test_override_does_not_mutate_input():
    data = {"model": {"rnn": "gru"}}
    out = apply_overrides(data, ["model.rnn=lstm", "train.epochs=2"])
    assert data == {"model": {"rnn": "gru"}}
    assert out == {"model": {"rnn": "lstm"}, "train": {"epochs": 2}}


def test_malformed_override_without_equals():
    with pytest.raises(ConfigError) as err:
        experiment_from_dict({}, ["model.rnn"])
    assert "'model.rnn'" in str(err.value) and "KEY=VALUE" in str(err.value)


@pytest.mark.parametrize("item", ["=3", ".=3"])
def test_override_with_empty_key(item):
    with pytest.raises(ConfigError, match="empty key"):
        apply_overrides({}, [item])


def test_override_into_a_non_section():
    with pytest.raises(ConfigError, match="not a section"):
        apply_overrides({"name": "x"}, ["name.inner=3"])


def test_override_unparsable_value():
    with pytest.raises(ConfigError, match="invalid YAML"):
        apply_overrides({}, ["data.languages=[en, de"])


def test_override_of_unknown_key_is_rejected(tmp_path):
    msg = _error(tmp_path, {}, ["model.hidden=256"])
    assert "'hidden'" in msg and "decoder_hidden" in msg


def test_override_bad_type_names_the_key(tmp_path):
    assert "train.epochs" in _error(tmp_path, {}, ["train.epochs=3e-4"])


# ---- YAML files ----------------------------------------------------------------------------------
def test_invalid_yaml_reports_file_and_line(tmp_path):
    path = _write(
        tmp_path, "name: x\nmodel:\n  rnn: gru\n  attention: [bahdanau\ntrain:\n  epochs: 3\n"
    )
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:")
    line = int(msg[len(str(path)) + 1 :].split(":")[0])
    assert 4 <= line <= 6
    assert "invalid YAML" in msg


def test_bad_indentation_reports_its_line(tmp_path):
    path = _write(tmp_path, "name: x\nmodel:\n  rnn: gru\n   attention: bahdanau\n")
    with pytest.raises(ConfigError) as err:
        read_yaml(path)
    assert str(err.value).startswith(f"{path}:4:")


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file") as err:
        load_experiment(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(err.value)


def test_top_level_must_be_a_mapping(tmp_path):
    path = _write(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping") as err:
        load_experiment(path)
    assert str(path) in str(err.value)


def test_from_dict_on_a_plain_section():
    cfg = from_dict(Seq2SeqConfig, {"rnn": "lstm", "dropout": 0}, where="x.yaml: model")
    assert cfg.rnn == "lstm" and cfg.dropout == 0.0 and isinstance(cfg.dropout, float)
    with pytest.raises(ConfigError, match=r"x\.yaml: model\.rnn"):
        from_dict(Seq2SeqConfig, {"rnn": "rnn"}, where="x.yaml: model")


def test_max_src_len_one_is_rejected_by_the_config(tmp_path):
    assert "data.max_src_len" in _error(tmp_path, {"data": {"task": "numbers", "max_src_len": 1}})


# ---- value ranges, inapplicable keys, run names --------------------------------------------------
REPO = Path(__file__).resolve().parents[2]
TASK = {"data": {"task": "numbers"}}


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("train", "lr", -0.001),
        ("train", "lr", 0),
        ("train", "lr", float("nan")),
        ("train", "lr", float("inf")),
        ("train", "batch_size", 0),
        ("train", "max_tokens", 0),
        ("train", "threads", -1),
        ("train", "max_minutes", 0),
        ("train", "max_minutes", -1),
        ("train", "clip", -0.5),
        ("train", "lr_factor", 1.5),
        ("train", "lr_patience", -1),
        ("train", "min_lr", -1e-5),
        ("train", "warmup_steps", -1),
        ("train", "eval_every", -1),
        ("train", "average_checkpoints", -1),
        ("decode", "alpha", float("nan")),
        ("decode", "alpha", -1.0),
        ("decode", "beam_size", 0),
        ("decode", "max_len_ratio", -1.0),
        ("decode", "max_len_extra", -1),
        ("decode", "max_len_cap", 0),
        ("decode", "batch_size", 0),
        ("data", "max_number", 0),
    ],
)
def test_out_of_range_values_name_their_key(tmp_path, section, key, value):
    data = {"data": {"task": "numbers"}}
    data.setdefault(section, {})[key] = value
    assert f"{section}.{key}" in _error(tmp_path, data)


@pytest.mark.parametrize(
    "item",
    [
        "train.lr=nan",
        "train.lr=.nan",
        "train.lr=-1",
        "train.batch_size=0",
        "train.threads=-1",
        "train.max_minutes=0",
        "train.clip=-1",
        "decode.alpha=nan",
    ],
)
def test_out_of_range_overrides_name_their_key(tmp_path, item):
    assert item.split("=")[0] in _error(tmp_path, TASK, [item])


def test_zero_threads_and_null_budget_mean_the_defaults(tmp_path):
    cfg = load_experiment(_write(tmp_path, {**TASK, "train": {"threads": 0, "max_minutes": None}}))
    assert cfg.train.threads == 0 and cfg.train.max_minutes is None


@pytest.mark.parametrize(
    "data, overrides, key, because",
    [
        (
            {**TASK, "model": {"attention": "luong-dot", "heads": 8}},
            [],
            "model.heads",
            "attention multihead, not luong-dot",
        ),
        (
            {**TASK, "model": {"attention": "bahdanau", "input_feeding": False}},
            [],
            "model.input_feeding",
            "decoder luong, not bahdanau",
        ),
        (
            {**TASK, "model": {"attention": "multihead", "decoder": "bahdanau"}},
            ["model.input_feeding=false"],
            "model.input_feeding",
            "decoder luong, not bahdanau",
        ),
        (TASK, ["model.heads=8"], "model.heads", "attention multihead, not bahdanau"),
        (
            {**TASK, "model": {"attention": "none", "attention_dim": 64}},
            [],
            "model.attention_dim",
            "attention bahdanau or luong-dot",
        ),
        (
            {**TASK, "model": {"attention": "none"}},
            ["model.input_feeding=false"],
            "model.input_feeding",
            "decoder luong, not fixed",
        ),
    ],
)
def test_keys_that_do_not_apply_are_rejected(tmp_path, data, overrides, key, because):
    msg = _error(tmp_path, data, overrides)
    assert f"{key}: applies only to {because}" in msg


def test_inapplicable_defaults_and_saved_configs_are_fine(tmp_path):
    given = {**TASK, "model": {"attention": "luong-dot"}}
    cfg = load_experiment(_write(tmp_path, given))
    assert cfg.model.heads == Seq2SeqConfig().heads  # not given: no error
    full = {  # a checkpoint's resolved config
        **given,
        "data": dataclasses.asdict(cfg.data),
        "model": {**dataclasses.asdict(cfg.model)},
    }
    assert experiment_from_dict(full, source="ckpt/config.yaml") == cfg
    # training again from a saved config: every key is written, those that do not apply at their
    # defaults
    assert load_experiment(_write(tmp_path, full, "saved.yaml")) == cfg
    applicable = {
        **given,
        "model": {"attention": "multihead", "decoder": "luong", "heads": 2, "input_feeding": False},
    }
    assert load_experiment(_write(tmp_path, applicable, "ok.yaml")).model.heads == 2


# ---- the data section: one class per task --------------------------------------------------------
#: a valid value, other than its default, for every data key of every task
OWN_VALUES = {
    "numbers": {
        "seed": 3,
        "languages": ["de", "fr"],
        "direction": "both",
        "max_number": 50,
        "count": 3,
        "train_size": 30,
        "dev_size": 5,
        "test_size": 5,
    },
    "dates": {"seed": 4, "train_size": 300, "dev_size": 20, "test_size": 30},
    "phrases": {
        "seed": 5,
        "src_lang": "en",
        "tgt_lang": "es",
        "train_size": 200,
        "dev_size": 20,
        "test_size": 20,
        "max_adjectives": 3,
        "sentence_share": 0.5,
        "src_level": "char",  # its default is word (its gold links are between words)
        "tgt_level": "char",
    },
    "parallel": {"train": "t.tsv", "dev": ["d.src", "d.tgt"], "test": "x.tsv", "metric": "chrf"},
    "copyrare": {
        "seed": 2,
        "train_size": 100,
        "dev_size": 10,
        "test_size": 10,
        "src_level": "char",  # its default is whitespace (names and numbers are single words)
        "tgt_level": "char",
    },
    "listops": {
        "seed": 6,
        "train_size": 100,
        "dev_size": 10,
        "test_size": 10,
        "max_depth": 4,
        "max_args": 5,
        "min_length": 10,
        "max_length": 60,
        "max_src_len": 61,  # max_length and </s> (its own rule)
        "src_level": "char",  # its default is whitespace (operators are single words)
        "tgt_level": "char",
    },
    "g2p": {"directory": "cmudict", "download": True},
    "multi30k": {"directory": "m30k", "download": True, "src_lang": "en", "tgt_lang": "de"},
}
COMMON_VALUES = {
    "src_level": "word",
    "tgt_level": "sentencepiece",
    "lowercase": True,
    "vocab_size": 500,
    "max_src_len": 40,
    "max_tgt_len": 30,
    "overlong": "skip",
    "normalize": "NFD",
}


def _fields(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _beside(directory, name, cls, value):
    """``value`` of key ``name`` as loaded from an experiment file in ``directory``: paths
    absolute, read from there."""
    if name not in cls.PATH_KEYS:
        return value
    if isinstance(value, list):
        return [str(directory / v) for v in value]
    return str(directory / value)


@pytest.mark.parametrize("task", list(TASK_REGISTRY))
def test_each_task_takes_its_own_keys(tmp_path, task):
    own = {**COMMON_VALUES, **OWN_VALUES[task]}
    cls = TASK_REGISTRY[task].config
    assert set(_fields(cls)) == {"task", *own}, "give every key of the task a value here"
    cfg = load_experiment(_write(tmp_path, {"data": {"task": task, **own}}))
    assert type(cfg.data) is cls and cfg.data.task == task
    for name, value in own.items():
        assert getattr(cfg.data, name) == _beside(tmp_path, name, cls, value), name
        assert value != getattr(cls(), name), f"{name}: test a value other than the default"
    saved = experiment_to_dict(cfg)
    assert list(saved["data"]) == _fields(cls)  # a checkpoint stores the task's keys only
    assert experiment_from_dict(saved, source="ckpt/config.yaml") == cfg


def _keys_of_other_tasks(task: str) -> list[tuple[str, object]]:
    own = _fields(TASK_REGISTRY[task].config)
    return sorted(
        {
            (name, repr(value))
            for other, values in OWN_VALUES.items()
            if other != task
            for name, value in values.items()
            if name not in own
        }
    )


@pytest.mark.parametrize(
    "task, key, value",
    [(task, key, value) for task in TASK_REGISTRY for key, value in _keys_of_other_tasks(task)],
)
def test_a_key_of_another_task_is_one_line_naming_the_tasks_keys(tmp_path, task, key, value):
    given = {"task": task, **OWN_VALUES[task], key: eval(value)}
    msg = _error(tmp_path, {"data": given})
    own = ", ".join(_fields(TASK_REGISTRY[task].config))
    assert msg.endswith(f"data.{key}: not a key of task {task} (its keys: {own})"), msg
    assert "\n" not in msg
    # a --set override of it too
    msg = _error(tmp_path, {"data": {"task": task, **OWN_VALUES[task]}}, [f"data.{key}={value}"])
    assert f"data.{key}: not a key of task {task}" in msg


def test_a_task_set_by_override_picks_its_class(tmp_path):
    path = _write(tmp_path, {"data": {"task": "numbers", "max_number": 50}})
    msg = _error(tmp_path, {"data": {"task": "numbers", "max_number": 50}}, ["data.task=dates"])
    assert "data.max_number: not a key of task dates" in msg
    cfg = load_experiment(path, ["data.task=dates", "data.max_number=999", "data.dev_size=5"])
    assert type(cfg.data).__name__ == "DatesData" and cfg.data.dev_size == 5
    assert not hasattr(cfg.data, "max_number")


def test_a_missing_or_unknown_task_lists_the_registered_tasks(tmp_path):
    for given in ({"name": "x"}, {"data": {"task": "poetry"}}):
        msg = _error(tmp_path, given)
        assert "data.task" in msg
        assert all(task in msg for task in TASK_REGISTRY)
    with pytest.raises(ConfigError, match="data.task: 'poetry' is not one of"):
        data_from_dict({"task": "poetry"})


TASKS_AFTER_THE_SPLIT = {"phrases", "copyrare", "listops"}


def test_the_old_flat_keys_keep_their_defaults_in_every_task():
    """A key of the old single data section means what it meant, in every task that has it
    (but the tasks added after it was split: no flat section ever named them)."""
    for task_name, task in TASK_REGISTRY.items():
        if task_name in TASKS_AFTER_THE_SPLIT:
            continue
        defaults = task.config()
        for name in _fields(task.config):
            if name in task.config.ADDED_KEYS:  # a key of later: no flat section had it
                assert name not in FLAT_DEFAULTS, name
            elif name != "task":
                assert getattr(defaults, name) == FLAT_DEFAULTS[name], (task.config, name)


#: every key of the single data section of before, at its default (a saved config.yaml held them)
OLD_FLAT_SECTION = {
    "task": "numbers",
    "seed": 0,
    "languages": ["en", "de", "fr", "es"],
    "direction": "words2digits",
    "max_number": 999,
    "train_size": 20000,
    "dev_size": 1000,
    "test_size": 1000,
    "train": None,
    "dev": None,
    "test": None,
    "directory": None,
    "download": False,
    "src_lang": "de",
    "tgt_lang": "en",
    "src_level": "char",
    "tgt_level": "char",
    "lowercase": False,
    "vocab_size": 8000,
    "max_src_len": 100,
    "max_tgt_len": 100,
    "overlong": "truncate",
}


@pytest.mark.parametrize("task", list(TASK_REGISTRY))
def test_an_old_flat_data_section_at_its_defaults_still_loads(tmp_path, task):
    own = {"task": task, **OWN_VALUES[task]}
    expected = experiment_from_dict({"data": own})
    flat = {**OLD_FLAT_SECTION, **own}
    # a checkpoint's config.yaml, and the same file trained again by a person
    assert experiment_from_dict({"data": flat}, source="ckpt/config.yaml") == expected
    expected.data.normalize = "NFC"  # trained again by a person: today's default form
    cls = TASK_REGISTRY[task].config
    for name in cls.PATH_KEYS:  # a person's file: paths read from its directory
        setattr(expected.data, name, _beside(tmp_path, name, cls, getattr(expected.data, name)))
    assert load_experiment(_write(tmp_path, {"data": flat})) == expected


def test_a_checkpoint_keeps_loading_with_keys_its_task_never_read(tmp_path):
    """Before the split, a saved config could hold any value for another task's key."""
    saved = {"data": {"task": "g2p", "directory": "d", "max_number": 12, "train_size": 5}}
    cfg = experiment_from_dict(saved, source="ckpt/config.yaml")
    assert cfg.data == TASK_REGISTRY["g2p"].config(directory="d", normalize="none")
    msg = _error(tmp_path, saved)  # what a person writes must not hold them
    assert "data.max_number: not a key of task g2p" in msg
    # a key no task ever had is unknown in both
    with pytest.raises(ConfigError, match="unknown key 'sede'"):
        experiment_from_dict({"data": {"task": "g2p", "directory": "d", "sede": 1}})


@pytest.mark.parametrize("name", ["../../escape", "a/b", "..", ".", "", " ", "a\\b"])
def test_run_name_must_stay_inside_runs(tmp_path, name):
    msg = _error(tmp_path, {**TASK, "name": name})
    assert "name" in msg and repr(name) in msg


def test_output_dir_may_point_anywhere(tmp_path):
    given = {**TASK, "name": "run", "output_dir": "../elsewhere/run"}
    cfg = load_experiment(_write(tmp_path, given))
    assert cfg.run_dir == Path("../elsewhere/run")


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_loads(path):
    data = read_yaml(path)
    family = data.get("family", "seq2seq")
    if family == "seq2seq":
        load_experiment(path)
    else:
        module, name = FAMILY_PARSERS[family]
        getattr(importlib.import_module(module), name)(data, str(path))


#: a config family other than seq2seq -> (module, function) that parses its experiment file
FAMILY_PARSERS = {
    "vision": ("attnkit.families.vision.config", "parse_config"),
    "pointer": ("attnkit.families.pointer.config", "parse_config"),
    "graph": ("attnkit.families.graph.config", "parse_config"),
    "text": ("attnkit.families.text.config", "parse_config"),
    "memnet": ("attnkit.families.memnet.config", "parse_config"),
    "speech": ("attnkit.families.speech.config", "parse_config"),
}


@pytest.mark.parametrize(
    "data", [{1: "x", "bogus": "y"}, {None: 1, "zz": 2}, {"data": {2: 3, "xx": 1}}]
)
def test_keys_that_are_not_strings_are_named_in_a_config_error(data):
    """Unknown YAML keys ``1:`` or ``~:`` beside string ones: a ConfigError, not a TypeError."""
    with pytest.raises(ConfigError, match="unknown key"):
        experiment_from_dict(data, source="exp.yaml")


def test_vision_config_with_a_number_key_is_a_config_error():
    from attnkit.families.vision.config import parse_config

    with pytest.raises(ConfigError, match="unknown keys 'extra', 0"):
        parse_config({"family": "vision", 0: None, "extra": 1}, "exp.yaml")


def test_unreadable_yaml_is_reported_in_one_line(tmp_path):
    """PyYAML's reader errors span two lines; the CLI prints messages as one."""
    path = tmp_path / "exp.yaml"
    path.write_bytes(b"name: a\x00b\n")
    with pytest.raises(ConfigError, match="invalid YAML") as info:
        read_yaml(path)
    assert "\n" not in str(info.value)


def test_train_compile_is_replaced_by_the_backend_key(tmp_path):
    """An old `train.compile: true` (file or --set) is one error naming train.backend; `false`
    loads; a checkpoint's saved config with `compile: true` loads as the compile backend."""
    msg = _error(tmp_path, {"data": {"task": "numbers"}, "train": {"compile": True}})
    assert "train.compile" in msg and "backend: compile" in msg and "\n" not in msg
    msg = _error(tmp_path, {"data": {"task": "numbers"}}, ["train.compile=true"])
    assert "train.compile" in msg and "train.backend" in msg
    path = _write(tmp_path, {"data": {"task": "numbers"}, "train": {"compile": False}})
    assert load_experiment(path).train.backend == "auto"
    saved = experiment_from_dict({"data": {"task": "numbers"}, "train": {"compile": True}})
    assert saved.train.backend == "compile"
    cfg = load_experiment(path, ["train.backend=native", "decode.backend=reference"])
    assert (cfg.train.backend, cfg.decode.backend) == ("native", "reference")


@pytest.mark.parametrize(
    "old, new", [("grad_clip", "clip"), ("num_threads", "threads"), ("lr_schedule", "scheduler")]
)
def test_a_vision_key_of_an_earlier_version_names_the_shared_one(tmp_path, old, new):
    """The seq2seq and vision train sections share one vocabulary; the old vision names of its
    keys (in a file or --set) are one line naming the key to write."""
    msg = _error(tmp_path, {"data": {"task": "numbers"}, "train": {old: 1}})
    assert f"train.{old}: renamed to train.{new}" in msg and "\n" not in msg
    msg = _error(tmp_path, {"data": {"task": "numbers"}}, [f"train.{old}=1"])
    assert f"train.{old}: renamed to train.{new}" in msg


def test_clip_and_threads_take_null_as_off_and_default(tmp_path):
    path = _write(tmp_path, {"data": {"task": "numbers"}, "train": {"clip": None, "threads": None}})
    cfg = load_experiment(path)
    assert cfg.train.clip is None and cfg.train.threads is None


# ---- data.metric of the parallel task ---------------------------------------------------------
PARALLEL = {"task": "parallel", "train": "t.tsv", "dev": "d.tsv", "test": "x.tsv"}


@pytest.mark.parametrize(
    "level, metric", [("char", "exact"), ("word", "bleu"), ("sentencepiece", "bleu")]
)
def test_the_parallel_metric_defaults_by_target_level_and_is_saved_resolved(
    tmp_path, level, metric
):
    cfg = load_experiment(_write(tmp_path, {"data": {**PARALLEL, "tgt_level": level}}))
    assert cfg.data.metric == metric
    saved = experiment_to_dict(cfg)["data"]
    assert saved["metric"] == metric  # a checkpoint's config names the metric it was scored by
    assert experiment_from_dict({"data": saved}, source="ckpt/config.yaml").data.metric == metric


@pytest.mark.parametrize(
    "name, family, key, higher",
    [
        ("exact", "exact", "exact_match", True),
        ("bleu", "text", "bleu", True),
        ("chrf", "text", "chrf", True),
        ("wer", "text", "wer", False),
        ("cer", "text", "cer", False),
    ],
)
def test_each_parallel_metric_scores_and_decides_its_way(tmp_path, name, family, key, higher):
    cfg = load_experiment(_write(tmp_path, {"data": {**PARALLEL, "metric": name}}))
    assert task_metric(cfg.data) == Metric(family, key, higher)


def test_the_parallel_metric_choices_are_the_registry_s():
    assert tuple(PARALLEL_METRICS) == settings.PARALLEL_METRICS


def test_a_bad_metric_is_one_line_naming_the_key(tmp_path):
    msg = _error(tmp_path, {"data": {**PARALLEL, "metric": "rouge"}})
    assert "data.metric: 'rouge' is not one of exact, bleu, chrf, wer, cer" in msg
    assert "\n" not in msg
    msg = _error(tmp_path, {"data": {"task": "g2p", "directory": "d", "metric": "bleu"}})
    assert "data.metric: not a key of task g2p" in msg and "\n" not in msg


def test_the_other_tasks_keep_their_metric():
    assert task_metric(NumbersData()) == Metric("exact", "exact_match", True)
    g2p = data_from_dict({"task": "g2p", "directory": "d"})
    assert task_metric(g2p) == Metric("g2p", "wer", False)
    multi30k = data_from_dict({"task": "multi30k", "directory": "d"})
    assert task_metric(multi30k) == Metric("bleu", "bleu", True)


def test_a_checkpoint_from_before_data_metric_scores_by_exact_match():
    """Every parallel run was scored by exact match before the key; word targets now default to
    BLEU, but an old checkpoint's saved config must keep scoring as it did."""
    old = {"data": {**PARALLEL, "tgt_level": "word"}}  # no metric key
    cfg = experiment_from_dict(old, source="ckpt/config.yaml")
    assert cfg.data.metric == "exact"
    assert task_metric(cfg.data) == Metric("exact", "exact_match", True)


# ---- relative data paths ----------------------------------------------------------------------
def test_data_paths_are_read_beside_the_file_and_set_ones_from_the_current_directory(
    tmp_path, monkeypatch
):
    configs, elsewhere = tmp_path / "configs", tmp_path / "elsewhere"
    configs.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = _write(configs, {"data": {**PARALLEL, "dev": ["d.src", "/abs/d.tgt"]}})
    cfg = load_experiment(path, ["data.test=mine/x.tsv"])
    assert cfg.data.train == str(configs / "t.tsv")
    assert cfg.data.dev == [str(configs / "d.src"), "/abs/d.tgt"]
    assert cfg.data.test == str(elsewhere / "mine" / "x.tsv")  # a command-line path
    # a mapping built in Python has no file: its paths are the current directory's
    built = experiment_from_dict({"data": PARALLEL}, user=True)
    assert built.data.train == str(elsewhere / "t.tsv")
    # a checkpoint's saved config is read as written (old ones hold relative paths)
    assert experiment_from_dict({"data": PARALLEL}).data.train == "t.tsv"


def test_a_path_written_for_the_current_directory_still_works_with_a_warning(tmp_path, monkeypatch):
    """Before, relative paths were read from the current directory: such a file keeps working
    where the path exists there and not beside the file, and the warning says what to write."""
    configs = tmp_path / "configs"
    configs.mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.tsv").write_text("a\tb\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    path = _write(configs, {"data": {**PARALLEL, "train": "data/t.tsv"}})
    with pytest.warns(UserWarning, match=r"data.train: data/t.tsv .* write \.\./data/t\.tsv"):
        cfg = load_experiment(path)
    assert cfg.data.train == str(tmp_path / "data" / "t.tsv")
    (configs / "data").mkdir()
    (configs / "data" / "t.tsv").write_text("a\tb\n", encoding="utf-8")
    assert load_experiment(path).data.train == str(configs / "data" / "t.tsv")  # beside wins


@pytest.mark.parametrize(
    "model, needle",
    [
        ({"attention": "none", "decoder": "bahdanau"}, "bahdanau does not go with attention none"),
        ({"attention": "luong-dot", "decoder": "fixed"}, "fixed does not go with attention luong"),
    ],
)
def test_attention_none_pairs_with_the_fixed_decoder_only(tmp_path, model, needle):
    msg = _error(tmp_path, {**TASK, "model": model})
    assert "model.decoder: " in msg and needle in msg and "\n" not in msg


def test_attention_none_picks_the_fixed_decoder(tmp_path):
    cfg = load_experiment(_write(tmp_path, {**TASK, "model": {"attention": "none"}}))
    assert cfg.model.decoder_style == "fixed"
    for name in ("numbers_none.yaml", "dates_none.yaml"):  # the shipped configs load
        cfg = load_experiment(Path(__file__).resolve().parents[2] / "configs" / name)
        assert cfg.model.attention == "none" and cfg.model.decoder_style == "fixed"


# ---- YAML read with bounds (aliases, depth, keys given twice, size) -----------------------------
def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    path = _write(tmp_path, _bomb() + "name: [x]\n")
    with pytest.raises(ConfigError, match="more than 100,000 values once its aliases") as err:
        read_yaml(path)
    assert str(err.value).startswith(f"{path}:") and len(str(err.value)) < 200


def test_a_few_aliases_are_fine_and_a_cycle_is_refused():
    from attnkit.config import parse_yaml

    assert parse_yaml("a: &x [1, 2]\nb: *x\n", "c") == {"a": [1, 2], "b": [1, 2]}
    with pytest.raises(ConfigError, match="c:1: an alias refers to the value that contains it"):
        parse_yaml("&a [*a]", "c")


def test_an_alias_bomb_in_a_set_value_is_refused():
    nested = "&a0 [" + ", ".join(["lol"] * 10) + "]"
    for i in range(1, 8):
        nested = f"&a{i} [" + ", ".join([nested] + [f"*a{i - 1}"] * 9) + "]"
    with pytest.raises(ConfigError, match="--set .*aliases are expanded"):
        apply_overrides({}, ["data.languages=" + nested])


@pytest.mark.parametrize(
    "text, line",
    [("[" * 100 + "]" * 100, 1), ("x:\n" + "".join(" " * i + "k:\n" for i in range(1, 60)), 32)],
)
def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path, text, line):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=f"{path}:{line}: nested deeper than 32 levels"):
        read_yaml(path)


def test_a_key_given_twice_names_both_lines(tmp_path):
    path = _write(tmp_path, "name: a\nmodel:\n  hidden: 3\n  rnn: gru\n  hidden: 4\n")
    with pytest.raises(ConfigError) as err:
        read_yaml(path)
    assert str(err.value) == f"{path}:5: key 'hidden' given twice (lines 3 and 5); give it once"
    with pytest.raises(ConfigError, match="given twice"):
        apply_overrides({}, ["model={a: 1, a: 2}"])


def test_a_config_file_above_the_size_limit_or_a_device_is_refused(tmp_path, monkeypatch):
    import attnkit.config

    monkeypatch.setattr(attnkit.config, "MAX_YAML_BYTES", 100)
    path = _write(tmp_path, "name: x\n" + "# padding\n" * 20)
    with pytest.raises(ConfigError, match=r"bytes, above the limit of 100"):
        read_yaml(path)
    with pytest.raises(ConfigError, match="/dev/zero: more than 100 bytes"):
        read_yaml("/dev/zero")


def test_a_rejected_value_is_shown_bounded():
    from attnkit.config import SHOWN_CHARS, shown

    huge = [[["x" * 1000] * 1000] * 1000]  # a million strings by reference: shown in bounded time
    assert len(shown(huge)) <= SHOWN_CHARS

    @dataclasses.dataclass
    class Small:
        n: int = 1

    with pytest.raises(ConfigError) as err:
        from_dict(Small, {"n": huge}, "c.yaml")
    assert str(err.value).startswith("c.yaml: n: expected an integer, got [[[")
    assert len(str(err.value)) < 200


def test_text_is_normalised_to_nfc_unless_said_and_old_checkpoints_keep_raw_text():
    assert data_from_dict({"task": "numbers"}).normalize == "NFC"
    assert data_from_dict({"task": "numbers", "normalize": "none"}).normalize == "none"
    # a config a checkpoint saved before the key: its text was read as it came
    assert data_from_dict({"task": "numbers"}, saved=True).normalize == "none"
    assert (
        data_from_dict(
            {"task": "parallel", "train": "a", "dev": "b", "test": "c"}, saved=True
        ).metric
        == "exact"
    )
    with pytest.raises(ConfigError, match="data.normalize"):
        data_from_dict({"task": "numbers", "normalize": "NFX"})


@pytest.mark.parametrize("family", list(FAMILY_PARSERS))
@pytest.mark.parametrize(
    "top, message",
    [
        (["not", "a", "mapping"], "the top level must be a mapping of sections"),
        ({"optimiser": "sgd"}, "unknown key 'optimiser'; valid keys: family, output_dir, data"),
        ({"family": "seq2seq"}, "family: 'seq2seq' is not a {family} config"),
        ({"output_dir": ""}, "output_dir: expected a directory name, got ''"),
        ({"output_dir": ["a"]}, "output_dir: expected a directory name"),
    ],
)
def test_every_family_checks_its_top_level_alike(family, top, message):
    module, name = FAMILY_PARSERS[family]
    with pytest.raises(ConfigError, match=re.escape(f"exp.yaml: {message.format(family=family)}")):
        getattr(importlib.import_module(module), name)(top, "exp.yaml")


def test_a_checkpoint_file_that_is_a_fifo_is_refused_unread(tmp_path):
    """regular=True (a checkpoint's vocabulary): a FIFO is refused at once, not waited on."""
    import os

    from attnkit.config import read_text_bounded
    from attnkit.data.vocab import Vocab
    from attnkit.errors import CheckpointError

    os.mkfifo(tmp_path / "vocab.json")
    with pytest.raises(CheckpointError, match="vocab.json: is a FIFO, device or socket"):
        Vocab.load(tmp_path / "vocab.json")
    (tmp_path / "ok.txt").write_text("fine", encoding="utf-8")
    assert read_text_bounded(tmp_path / "ok.txt", 10, regular=True) == "fine"
