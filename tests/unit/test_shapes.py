"""A local Hugging Face model whose config.json disagrees with its weights' safetensors headers is
refused in one line naming the tensor and both shapes, before the model is built (tiny models
built from configs: nothing is downloaded)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the hf extra (transformers) is not installed")

import attnkit  # noqa: E402
from attnkit.errors import CheckpointError  # noqa: E402
from attnkit.families.hf import kinds  # noqa: E402
from attnkit.families.hf.shapes import check_shapes, stored_shapes  # noqa: E402
from attnkit.families.hf.tiny import KINDS, save_tiny  # noqa: E402


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    return save_tiny("bert", tmp_path_factory.mktemp("bert") / "model")


def _edited(source: Path, tmp_path: Path, **changes) -> Path:
    """A copy of the model ``source`` with ``changes`` made to its config.json."""
    copy = tmp_path / "edited"
    shutil.copytree(source, copy)
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, **changes}))
    return copy


@pytest.fixture
def never_built(monkeypatch):
    """Fails the test where transformers is asked to build the model."""

    def build(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(kinds, "_weights", build)


def _refusal(directory: Path) -> str:
    with pytest.raises(CheckpointError) as err:
        attnkit.load(f"hf:{directory}")
    message = str(err.value)
    assert "\n" not in message and str(directory) in message
    return message


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_tiny_model_fits_its_own_config(kind, tmp_path):
    import transformers
    from transformers import AutoConfig

    directory = save_tiny(kind, tmp_path / kind)
    config = AutoConfig.from_pretrained(directory)
    cls = getattr(transformers, config.architectures[0])
    check_shapes(cls, config, directory, f"hf:{directory}")  # no error
    assert stored_shapes(directory)  # its weights' shapes were read


def test_a_wider_hidden_size_names_the_tensor_and_both_shapes(bert, tmp_path, never_built):
    config = json.loads((bert / "config.json").read_text())
    message = _refusal(_edited(bert, tmp_path, hidden_size=2 * config["hidden_size"]))
    width = config["hidden_size"]
    shapes = re.search(
        r"model\.safetensors: bert\.\S+ has shape \((.*)\) in the weights, "
        r"\((.*)\) in the model its config\.json describes$",
        message,
    )
    assert shapes, message
    assert str(width) in shapes[1].split(", ") and str(2 * width) in shapes[2].split(", ")


def test_a_huge_vocabulary_is_refused_before_it_is_allocated(bert, tmp_path, never_built):
    message = _refusal(_edited(bert, tmp_path, vocab_size=1 << 20))
    assert "word_embeddings.weight" in message and "(1048576, " in message


@pytest.mark.parametrize("change", [1, -1])
def test_more_or_fewer_layers_than_the_weights_hold(bert, tmp_path, never_built, change):
    layers = json.loads((bert / "config.json").read_text())["num_hidden_layers"]
    message = _refusal(_edited(bert, tmp_path, num_hidden_layers=layers + change))
    assert f"encoder.layer.{layers - 1 if change < 0 else layers}." in message
    assert "layers of encoder.layer" in message


def test_sharded_weights_are_read_from_their_index(bert, tmp_path):
    from transformers import AutoConfig, AutoModelForSequenceClassification

    sharded = tmp_path / "sharded"
    model = AutoModelForSequenceClassification.from_pretrained(bert)
    model.save_pretrained(sharded, max_shard_size="40KB")
    assert (sharded / "model.safetensors.index.json").is_file()
    assert set(stored_shapes(sharded)) == set(model.state_dict()) - {"bert.embeddings.position_ids"}
    config = AutoConfig.from_pretrained(sharded)
    config.intermediate_size += 1
    with pytest.raises(CheckpointError, match=r"model-\d+-of-\d+\.safetensors: .*intermediate"):
        check_shapes(type(model), config, sharded, "hf:sharded")


def test_an_index_naming_a_shard_outside_its_directory_is_refused(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a.weight": "../../etc/passwd"}})
    )
    with pytest.raises(CheckpointError, match="not a file beside the index"):
        stored_shapes(tmp_path)


def test_shards_of_any_name_are_read_and_the_shard_bound_holds(bert, tmp_path):
    """Hugging Face repositories name their shards as they like; the index is still bounded."""
    from transformers import AutoModelForSequenceClassification

    sharded = tmp_path / "sharded"
    AutoModelForSequenceClassification.from_pretrained(bert).save_pretrained(
        sharded, max_shard_size="40KB"
    )
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    renamed = {}
    for i, shard in enumerate(sorted(set(index["weight_map"].values()))):
        renamed[shard] = f"weights.{i}.safetensors"
        (sharded / shard).rename(sharded / renamed[shard])
    index["weight_map"] = {k: renamed[v] for k, v in index["weight_map"].items()}
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    shapes = stored_shapes(sharded)
    assert {file for _, file in shapes.values()} == set(renamed.values())
    index["weight_map"].update({f"t{i}": f"w{i}.safetensors" for i in range(2000)})
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"shards, above 1,000"):
        stored_shapes(sharded)


def test_a_value_the_model_refuses_is_one_line_before_it_is_built(bert, tmp_path, never_built):
    message = _refusal(_edited(bert, tmp_path, pad_token_id=10**6))
    assert "its config.json describes no model" in message
