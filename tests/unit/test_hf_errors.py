"""What goes wrong with a pretrained Hugging Face model says so in one line: transformers missing,
a missing directory, a model id not in the cache, a directory that is not a model, a model with
no tokenizer or with code of its own, an input longer than the model holds, a layer or head it
does not have, a task it does not do; and the command line draws and refuses the same way."""

from __future__ import annotations

import json
import sys

import pytest

import attnkit
from attnkit.cli import main
from attnkit.errors import AttnkitError, CheckpointError, InputError

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (pip install attnkit[hf])"
)
from attnkit.families.hf.tiny import save_tiny  # noqa: E402 - after the skip


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))  # an empty cache


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return save_tiny("bert", tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return save_tiny("gpt2", tmp_path_factory.mktemp("gpt2"))


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text, text
    return text


def test_without_transformers_loading_says_how_to_install_it(bert, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers fails
    with pytest.raises(CheckpointError) as error:
        attnkit.load(f"hf:{bert}")
    assert one_line(error) == (
        "Hugging Face models need the transformers package: pip install attnkit[hf]"
    )


def test_a_missing_directory_and_a_model_id_not_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError) as error:
        attnkit.load("hf:./models/nowhere")
    assert one_line(error) == f"hf:./models/nowhere: no such directory ({tmp_path}/models/nowhere)"
    with pytest.raises(CheckpointError) as error:
        attnkit.load("hf:someone/tiny-model", download=True)  # HF_HUB_OFFLINE wins
    text = one_line(error)
    assert "no model 'someone/tiny-model' in the Hugging Face cache" in text
    assert f"({tmp_path / 'hub-cache'})" in text and "HF_HUB_OFFLINE is set" in text
    assert "fetch it once with `hf download someone/tiny-model`" in text


def test_a_model_id_found_in_the_cache_loads_offline(bert, tmp_path):
    """The cache's layout (models--owner--name/snapshots/REV/ and refs/main), as `hf download`
    leaves it, holding the tiny model's files."""
    import shutil

    repo = tmp_path / "hub-cache" / "models--someone--tiny-bert"
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(bert, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40, encoding="utf-8")
    model = attnkit.load("hf:someone/tiny-bert")
    assert model.name == "hf:someone/tiny-bert" and model.kind.name == "classifier"


def test_a_directory_that_is_not_a_model(bert, tmp_path):
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(CheckpointError) as error:
        attnkit.load(f"hf:{tmp_path}")
    assert "holds no config.json, so it is not a Hugging Face model directory" in one_line(error)
    with pytest.raises(CheckpointError) as error:
        attnkit.load(f"hf:{tmp_path / 'notes.txt'}")
    assert one_line(error).endswith("notes.txt is a file; give the model's directory")
    # a model saved without its tokenizer
    model = transformers.BertForSequenceClassification.from_pretrained(bert)
    model.save_pretrained(tmp_path / "bare")
    with pytest.raises(CheckpointError) as error:
        attnkit.load(f"hf:{tmp_path / 'bare'}")
    assert "no tokenizer (tokenizer.json, tokenizer_config.json) found" in one_line(error)


def test_a_model_with_code_of_its_own_is_refused(bert, tmp_path):
    import shutil

    custom = tmp_path / "custom"
    shutil.copytree(bert, custom)
    config = json.loads((custom / "config.json").read_text(encoding="utf-8"))
    config["architectures"] = ["MyBertForEverything"]
    config["auto_map"] = {"AutoModel": "modeling_my.MyBertForEverything"}
    (custom / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(CheckpointError) as error:
        attnkit.load(f"hf:{custom}")
    assert "MyBertForEverything is not a class of transformers" in one_line(error)
    assert "attnkit runs no code from a hub (trust_remote_code stays off)" in str(error.value)


def test_an_input_longer_than_the_model_holds(bert, gpt2):
    text = "the cat sat on the mat " * 5
    count = len(transformers.AutoTokenizer.from_pretrained(bert)(text)["input_ids"])
    assert count > 24
    with pytest.raises(AttnkitError) as error:
        attnkit.load(f"hf:{bert}").classify(text)
    assert one_line(error) == (
        f"the input is {count} tokens; hf:{bert} holds at most 24 (max_position_embeddings): "
        "shorten it"
    )
    model = attnkit.load(f"hf:{gpt2}")
    with pytest.raises(AttnkitError) as error:
        model.generate("the cat sat", max_new_tokens=30)
    assert one_line(error).startswith(
        f"the prompt (4 tokens) with 30 to generate is 34 tokens; hf:{gpt2} holds at most 32"
    )
    for bad, says in (
        ("", "a non-blank string"),
        ("   ", "a non-blank string"),
        (None, "a string.*not None"),
    ):
        with pytest.raises(InputError, match=f"^prompts: give {says}"):
            model.generate(bad)


def test_a_layer_head_or_part_that_does_not_exist(bert):
    result = attnkit.load(f"hf:{bert}").classify("the cat sat")
    for options, message in (
        ({"layer": 3}, f"layer 3: hf:{bert}'s self attention has layers 1 to 2 (counted from 1)"),
        ({"layer": 0}, f"layer 0: hf:{bert}'s self attention has layers 1 to 2 (counted from 1)"),
        ({"head": 5}, f"head 5: hf:{bert}'s self attention has heads 1 to 4 (counted from 1)"),
        ({"part": "cross"}, "part 'cross': this result has self"),
    ):
        with pytest.raises(AttnkitError) as error:
            result.plot(**options)
        assert one_line(error) == message
    figure = result.plot(layer=2, head=4)  # the last layer's last head exists
    assert "layer 2, head 4" in figure.axes[0].get_title()


def test_a_task_the_model_does_not_do_names_the_one_it_does(bert, gpt2):
    model = attnkit.load(f"hf:{bert}")
    with pytest.raises(AttnkitError) as error:
        model.generate("the cat")
    assert one_line(error) == (
        f"generate: hf:{bert} is a sequence classifier (BertForSequenceClassification); "
        "call .classify(...)"
    )
    generator = attnkit.load(f"hf:{gpt2}")
    for bad, says in ((0, "must be at least 1"), (-1, "must be at least 1"), (2.5, "integer")):
        with pytest.raises(InputError, match=f"^max_new_tokens.*{says}"):
            generator.generate("the cat", max_new_tokens=bad)
    with pytest.raises(InputError, match="^max_new_tokens: give an integer, not True"):
        generator.generate("the cat", max_new_tokens=True)


def test_the_plot_command_draws_and_refuses_in_one_line(bert, gpt2, tmp_path, capsys):
    picture = tmp_path / "map.png"
    assert main(["plot", "--model", f"hf:{bert}", "the cats looked", "-o", str(picture)]) == 0
    assert picture.read_bytes().startswith(b"\x89PNG")
    out = capsys.readouterr().out
    assert out.startswith("the cats looked -> ") and f"hf:{bert}: self attention: " in out
    for extra in (["--grid"], ["--map", "rollout"], ["--layer", "2", "--head", "1"]):
        picture.unlink()
        assert main(["plot", "--model", f"hf:{gpt2}", "the cat", "-o", str(picture), *extra]) == 0
        assert picture.read_bytes().startswith(b"\x89PNG")
    for argv, needle in (
        (["plot", "--model", f"hf:{bert}", "x", "-o", str(picture), "--layer", "9"], "layer 9: "),
        (["plot", "--model", f"hf:{bert}", "x", "-o", str(picture), "--map", "flow"], "rollout"),
        (["plot", "--model", f"hf:{bert}", "x", "-o", str(tmp_path / "m.gif")], ".png, .svg"),
        (["evaluate", "--model", f"hf:{bert}"], "has no attnkit test split to evaluate"),
        (["explain", "--model", f"hf:{bert}", "x", "--split", "test"], "explains typed TEXTs"),
        (["plot", "--model", f"hf:{tmp_path}/none", "x", "-o", str(picture)], "no such directory"),
    ):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err


def test_train_refuses_a_pretrained_family_experiment(tmp_path):
    from attnkit.errors import ConfigError

    config = tmp_path / "hf.yaml"
    config.write_text("family: hf\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="pretrained models are loaded, not trained here"):
        attnkit.train(config)


def test_attention_that_cannot_be_captured_is_refused_not_approximated(bert):
    from attnkit.errors import CaptureError

    model = attnkit.load(f"hf:{bert}")
    model.model.set_attn_implementation("eager")  # switched away from SDPA behind attnkit's back
    with pytest.raises(CaptureError) as error:
        model.classify("the cat sat")
    assert "made no attention call that capture sees" in one_line(error)


@pytest.mark.parametrize(
    ("key", "needle"),
    [
        ("num_hidden_layers", "num_hidden_layers 4,000,000,000 is above the cap of 256"),
        ("hidden_size", "hidden_size 4,000,000,000 is above the cap"),
        # no size: the model refuses it, in one line
        ("pad_token_id", "its config.json describes no model: Padding_idx"),
    ],
)
def test_a_crafted_config_size_is_refused_before_a_model_is_built(bert, tmp_path, key, needle):
    import shutil

    crafted = tmp_path / "crafted"
    shutil.copytree(bert, crafted)
    config = json.loads((crafted / "config.json").read_text(encoding="utf-8"))
    config[key] = 4_000_000_000
    (crafted / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(CheckpointError) as caught:
        attnkit.load(f"hf:{crafted}")
    assert needle in one_line(caught)
