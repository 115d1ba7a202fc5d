"""Where data sets are looked for: data.directory, then $ATTNKIT_DATA_DIR, then the user cache;
and the messages that say how to get missing files name keys and commands that exist."""

from __future__ import annotations

import re
from pathlib import Path

import platformdirs
import pytest

from attnkit.cli import build_parser
from attnkit.config import apply_overrides
from attnkit.data import location, mnist
from attnkit.data.download import HOW_TO_DOWNLOAD, ensure_files
from attnkit.data.tasks import registry
from attnkit.data.tasks import vision as vision_tasks
from attnkit.errors import DataError
from attnkit.families.seq2seq.config import load_experiment

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fake user cache directory; ATTNKIT_DATA_DIR unset."""
    monkeypatch.delenv(location.ENV, raising=False)
    fake = tmp_path / "cache"
    monkeypatch.setattr(platformdirs, "user_cache_dir", lambda *a, **k: str(fake))
    return fake


def test_the_order_is_directory_then_environment_then_user_cache(cache, tmp_path, monkeypatch):
    assert location.dataset_dir("cmudict") == cache / "data" / "cmudict"
    monkeypatch.setenv(location.ENV, str(tmp_path / "shared"))
    assert location.dataset_dir("cmudict") == tmp_path / "shared" / "cmudict"
    assert location.dataset_dir("cmudict", tmp_path / "mine") == tmp_path / "mine"
    assert location.dataset_dir("cmudict", "relative/dir") == Path("relative/dir")  # to the cwd
    monkeypatch.setenv(location.ENV, "  ")  # blank: as if unset
    assert location.data_root() == cache / "data"


def test_every_task_resolves_its_directory_the_same_way(cache, monkeypatch):
    seen = {}

    def fake_load(directory, *args, **kwargs):
        seen["directory"], seen["download"] = Path(directory), kwargs.get("download")
        raise DataError("stop here")

    from attnkit.data.tasks import g2p, multi30k

    for module, name in ((g2p, "cmudict"), (multi30k, "multi30k")):
        monkeypatch.setattr(module, "load", fake_load)
        task = "g2p" if name == "cmudict" else "multi30k"
        cfg = registry.data_from_dict({"task": task, "download": True})
        with pytest.raises(DataError):
            registry.build_splits(cfg)
        assert seen == {"directory": cache / "data" / name, "download": True}
    assert vision_tasks.data_directory(None) == cache / "data" / "mnist"


@pytest.mark.parametrize(
    "name", ["g2p_cmudict", "g2p_reference", "multi30k_de_en", "multi30k_en_fr", "multi30k_fr_en"]
)
def test_shipped_configs_name_no_directory_beside_the_repository(name):
    cfg = load_experiment(REPO / "configs" / f"{name}.yaml")
    assert cfg.data.directory is None and cfg.data.download is True


def test_a_config_without_a_directory_reads_the_environment(tmp_path, monkeypatch):
    """What the tests rely on: ATTNKIT_DATA_DIR (set by conftest) decides where data are read."""
    monkeypatch.setenv(location.ENV, str(tmp_path))
    with pytest.raises(DataError) as info:
        registry.build_splits(registry.data_from_dict({"task": "g2p", "download": False}))
    assert str(tmp_path / "cmudict") in str(info.value)


def test_missing_file_messages_name_a_key_and_a_command_that_exist(tmp_path):
    messages = []
    for load in (
        lambda: ensure_files(tmp_path, {"a.txt": "0" * 64}, "https://example.org/"),
        lambda: mnist.load(tmp_path, "test"),
    ):
        with pytest.raises(DataError) as info:
            load()
        messages.append(str(info.value))
    for message in messages:
        assert HOW_TO_DOWNLOAD in message and "--download" not in message
    # the key exists (an override of it applies) and so does the command with its --set option
    key, value = re.search(r"--set (\S+)=(\S+)\)", HOW_TO_DOWNLOAD).groups()
    assert apply_overrides({"data": {"task": "g2p"}}, [f"{key}={value}"])["data"]["download"]
    train = build_parser().parse_args(["train", "x.yaml", "--set", f"{key}={value}"])
    assert train.overrides == [f"{key}={value}"]


def test_a_loaded_checkpoint_s_data_paths_are_this_machine_s(tmp_path):
    """checkpoint_data: the folder is data_dir (else null: $ATTNKIT_DATA_DIR/<name>), each file
    its name inside data_dir (else null), download off; the stored section is left as it was."""
    from attnkit.data.tasks.speech_set import SpeechData
    from attnkit.data.tasks.text import TextDataConfig

    stored = vision_tasks.DataConfig(directory="/", download=True)
    loaded = location.checkpoint_data(stored)
    assert (loaded.directory, loaded.download) == (None, False)
    assert (stored.directory, stored.download) == ("/", True)
    assert location.checkpoint_data(stored, tmp_path).directory == str(tmp_path)
    assert location.checkpoint_data(SpeechData(directory="/etc")).directory is None
    text = TextDataConfig(task="tsv", train="/a/train.tsv", dev="/b/dev.tsv", test="../c/t.tsv")
    assert (location.checkpoint_data(text).dev, location.checkpoint_data(text).test) == (None,) * 2
    mine = location.checkpoint_data(text, tmp_path)
    assert (mine.train, mine.test) == (str(tmp_path / "train.tsv"), str(tmp_path / "t.tsv"))


def test_a_text_split_without_data_dir_is_one_line_naming_the_file(tmp_path):
    from attnkit.data.tasks.text import TextDataConfig, checkpoint_split

    (tmp_path / "dev.tsv").write_text("pos\tgood film\n", encoding="utf-8")
    text = TextDataConfig(task="tsv", train="/x/train.tsv", dev=str(tmp_path / "dev.tsv"),
                          test="/x/test.tsv")  # fmt: skip
    with pytest.raises(DataError) as err:
        checkpoint_split(text, "dev", ["neg", "pos"])  # the stored path holds it: not read
    assert "dev.tsv" in str(err.value) and "--data-dir" in str(err.value)
    assert [e.words for e in checkpoint_split(text, "dev", ["neg", "pos"], tmp_path)] == [
        ["good", "film"]
    ]


def test_data_dir_is_refused_for_a_family_that_reads_no_split_with_it(tmp_path, capsys):
    from attnkit.cli import main
    from attnkit.zoo import resolve

    model = resolve("zoo:pointer-sort10")
    assert main(["evaluate", "--model", str(model), "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--data-dir" in err and "not a pointer one" in err
