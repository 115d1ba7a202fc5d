"""A checkpoint is checked before anything of its size is allocated, for every family.

The tests iterate the registries (``families.FAMILIES`` for the checkpoint families, the seq2seq
``ARCHITECTURES`` and the vision ``MODEL_TYPES`` for their models): a family registered without
a tiny checkpoint maker here fails :func:`test_every_loader_family_has_a_maker`, and each one
registered with a maker gets every check below the day it is added. A family with a ``scheme``
loads models that are not attnkit checkpoints (``hf:DIR``) and needs no maker.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import yaml

from attnkit.checkpoint import read_config, validate, write_checkpoint
from attnkit.checkpoint.validate import WIDTH_CAP, cap_of, check_sizes, read_header
from attnkit.config import from_dict
from attnkit.data.tokenizers import CharTokenizer
from attnkit.data.vocab import Vocab
from attnkit.errors import CheckpointError
from attnkit.families import FAMILIES
from attnkit.families.seq2seq.config import experiment_from_dict
from attnkit.families.seq2seq.translator import Translator
from attnkit.families.vision.kinds import MODEL_TYPES
from attnkit.models.architectures import ARCHITECTURES, build_model

REPO_SRC = Path(__file__).resolve().parents[2] / "src"
TINY_SEQ2SEQ = {
    "rnn": {"embedding_dim": 8, "encoder_hidden": 8, "decoder_hidden": 8, "attention_dim": 8},
    "transformer": {"embedding_dim": 8, "encoder_layers": 1, "decoder_layers": 1, "heads": 2,
                    "ff_dim": 16},
}  # fmt: skip


def _seq2seq(arch: str):
    def make(directory: Path) -> Path:
        cfg = experiment_from_dict({"model": {"arch": arch, **TINY_SEQ2SEQ.get(arch, {})}})
        tok = CharTokenizer()
        vocab = Vocab.build([list("abc")])
        model = build_model(cfg.model, len(vocab), len(vocab)).eval()
        Translator(model, cfg, tok, tok, vocab, vocab, torch.device("cpu")).save(directory)
        return directory

    return make


def _vision(model_type: str):
    def make(directory: Path) -> Path:
        family = MODEL_TYPES[model_type]
        model_cfg = from_dict(family.config_cls, {}, "model")
        config = {
            "family": "vision",
            "data": {"task": family.tasks[0]},
            "model": {"type": model_type, **dataclasses.asdict(model_cfg)},
        }
        write_checkpoint(directory, "vision", family.build(model_cfg).state_dict(), config, {})
        return directory

    return make


def _pointer(directory: Path) -> Path:
    from attnkit.families.pointer.config import parse_config as pointer_config
    from attnkit.families.pointer.train import build_model as build_pointer

    cfg = pointer_config({"family": "pointer", "model": {"hidden": 8, "attention_dim": 8}})
    write_checkpoint(directory, "pointer", build_pointer(cfg).state_dict(), cfg.to_dict(), {})
    return directory


def _speech(attention: str):
    def make(directory: Path) -> Path:
        from attnkit.families.speech.bundle import build_model as build_speech
        from attnkit.families.speech.config import parse_config as speech_config

        model = {"attention": attention, "listener_hidden": 4, "speller_hidden": 6}
        model.update(attention_dim=4, embedding=3, location_channels=2, location_kernel=3)
        cfg = speech_config({"family": "speech", "data": {"n_mels": 8}, "model": model})
        write_checkpoint(directory, "speech", build_speech(cfg).state_dict(), cfg.to_dict(), {})
        return directory

    return make


def _graph(model_type: str):
    def make(directory: Path) -> Path:
        from attnkit.data.graph.sources import load_graph
        from attnkit.families.graph.bundle import build_model as build_graph
        from attnkit.families.graph.config import parse_config as graph_config

        data = {"name": "dictionary_lookup", "k": 3, "graphs": 10}
        model = {"type": model_type, "hidden": 4, "heads": 2}
        cfg = graph_config({"family": "graph", "data": data, "model": model})
        net = build_graph(cfg, load_graph(cfg.data))
        write_checkpoint(directory, "graph", net.state_dict(), cfg.to_dict(), {})
        return directory

    return make


def _text(attention: str):
    def make(directory: Path) -> Path:
        from attnkit.families.text import bundle as tckpt
        from attnkit.families.text.config import parse_config as text_config
        from attnkit.training.state import TrainerState

        data = {"task": "tsv", "train": "t", "dev": "d", "test": "e", "labels": ["neg", "pos"]}
        model = {"attention": attention, "embedding_dim": 8, "hidden": 6}
        cfg = text_config({"family": "text", "data": data, "model": model})
        vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", "a", "film"])
        bundle = tckpt.TextBundle(cfg, vocab, ["neg", "pos"], None)
        bundle.model = tckpt.build_model(cfg, vocab, bundle.labels)
        tckpt.save(directory, bundle, None, TrainerState(), resumable=False)
        return directory

    return make


def _memnet(memory: str):
    def make(directory: Path) -> Path:
        from attnkit.data.babi_vectors import BabiVocab
        from attnkit.families.memnet.adapter import save_checkpoint
        from attnkit.families.memnet.config import parse_config as memnet_config
        from attnkit.models.memn2n import MemN2N
        from attnkit.training.state import TrainerState

        model = {"memory": memory, "dim": 4, "hops": 2}
        cfg = memnet_config({"family": "memnet", "data": {"memory_size": 5}, "model": model})
        vocab = BabiVocab(["<empty>", "garden", "is", "john", "went", "where"], 3, 3, 5)
        net = MemN2N(cfg.model, len(vocab.tokens), cfg.data.memory_size)
        save_checkpoint(directory, net, cfg, vocab, TrainerState())
        return directory

    return make


#: each family of FAMILIES -> {model name: writer of a tiny checkpoint of it}
MAKERS = {
    "memnet": {name: _memnet(name) for name in ("adjacent", "key_value")},
    "text": {name: _text(name) for name in ("additive", "none")},
    "graph": {name: _graph(name) for name in ("gat", "gcn")},
    "pointer": {"pointer_net": _pointer},
    "speech": {name: _speech(name) for name in ("location", "content")},
    "seq2seq": {arch: _seq2seq(arch) for arch in ARCHITECTURES},
    "vision": {name: _vision(name) for name in MODEL_TYPES},
}
CASES = [(family, name) for family, models in MAKERS.items() for name in models]


def test_every_loader_family_has_a_maker():
    # a family with a scheme (hf:) loads models that are not attnkit checkpoints: none to make
    loaders = {name for name, family in FAMILIES.items() if family.scheme is None}
    assert loaders <= set(MAKERS), (
        f"add a tiny checkpoint maker for {sorted(loaders - set(MAKERS))} to MAKERS"
    )


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("families")
    return {(f, n): MAKERS[f][n](root / f"{f}-{n}") for f, n in CASES}


def _with_config(src: Path, dest: Path, change) -> Path:
    import shutil

    shutil.copytree(src, dest)
    path = dest / "config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(config)
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return dest


def _int_keys(config: dict) -> list[str]:
    return [k for k, v in config["model"].items() if isinstance(v, int) and not isinstance(v, bool)]


@pytest.mark.parametrize("family, name", CASES)
def test_every_family_loads_through_the_checked_path(checkpoints, monkeypatch, family, name):
    """A family's loader reads the safetensors header and builds on meta first (build_checked)."""
    seen = []
    real = validate.read_header
    monkeypatch.setattr(validate, "read_header", lambda p: seen.append(p) or real(p))
    FAMILIES[family].model_class().load(checkpoints[family, name], "cpu")
    assert seen == [checkpoints[family, name] / "model.safetensors"]


@pytest.mark.parametrize("family, name", CASES)
def test_every_size_key_above_its_cap_is_refused_naming_it(checkpoints, tmp_path, family, name):
    src = checkpoints[family, name]
    keys = _int_keys(yaml.safe_load((src / "config.yaml").read_text(encoding="utf-8")))
    assert keys, "a model config without a size key"
    for i, key in enumerate(keys):
        bad = _with_config(src, tmp_path / str(i), lambda c, k=key: c["model"].update({k: 10**12}))
        with pytest.raises(CheckpointError) as err:
            FAMILIES[family].model_class().load(bad, "cpu")
        msg = str(err.value)
        assert f"model.{key}: 1000000000000 is above the cap of {cap_of(key):,}" in msg, msg


@pytest.mark.parametrize("family, name", CASES)
def test_a_config_that_does_not_describe_the_tensors_is_refused(
    checkpoints, tmp_path, monkeypatch, family, name
):
    """A width changed under its cap: refused by the meta-device comparison, before any real
    model of that size is built (the real build is never reached)."""
    src = checkpoints[family, name]
    config = yaml.safe_load((src / "config.yaml").read_text(encoding="utf-8"))
    real_builds = []
    real = validate.load_model_state
    monkeypatch.setattr(validate, "load_model_state", lambda *a: real_builds.append(a) or real(*a))
    mismatched = 0
    for i, key in enumerate(_int_keys(config)):
        value = config["model"][key]
        bad = _with_config(
            src, tmp_path / str(i), lambda c, k=key, v=value: c["model"].update({k: v * 2})
        )
        before = len(real_builds)
        try:
            FAMILIES[family].model_class().load(
                bad, "cpu"
            )  # a key that shapes no tensor (heads of bahdanau) loads
        except CheckpointError as exc:
            if "model.safetensors" in str(exc):
                mismatched += 1
                assert len(real_builds) == before, f"{key}: a real model was built first"
    assert mismatched, "no size key changes the tensors' shapes"


def test_caps():
    assert cap_of("encoder_layers") == cap_of("layers") == 256 and cap_of("heads") == 256
    assert cap_of("ff_dim") == cap_of("decoder_hidden") == WIDTH_CAP
    check_sizes({"model": {"ff_dim": WIDTH_CAP, "layers": [1, 2]}, "train": {"seed": 10**9}}, "c")
    with pytest.raises(
        CheckpointError, match=r"c: model\.sub\.layers: 300 is above the cap of 256"
    ):
        check_sizes({"model": {"sub": [{"layers": 300}]}}, "c")
    with pytest.raises(CheckpointError, match="decode.beam_size: 5000 is above"):
        check_sizes({"decode": {"beam_size": 5000}}, "c")


def test_a_checkpoint_config_alias_bomb_is_refused_fast(checkpoints, tmp_path):
    import shutil

    bad = tmp_path / "bomb"
    shutil.copytree(checkpoints["seq2seq", "rnn"], bad)
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    lines += ["model: {embedding_dim: *a8}"]
    (bad / "config.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CheckpointError, match="aliases are expanded") as err:
        read_config(bad)
    assert len(str(err.value)) < 300


def test_a_checkpoint_config_with_a_key_twice_is_refused(checkpoints, tmp_path):
    bad = _with_config(checkpoints["seq2seq", "rnn"], tmp_path / "dup", lambda c: None)
    text = (bad / "config.yaml").read_text(encoding="utf-8")
    (bad / "config.yaml").write_text(text + "name: again\n", encoding="utf-8")
    with pytest.raises(CheckpointError, match=r"key 'name' given twice \(lines \d+ and \d+\)"):
        read_config(bad)


@pytest.mark.parametrize(
    "header, why",
    [
        (b"\xff" * 8, "header of"),
        (b"\x04\x00\x00\x00\x00\x00\x00\x00[]]]", "unreadable header"),
        (b"\x01", "no header"),
    ],
)
def test_a_malformed_safetensors_header_is_one_line(tmp_path, header, why):
    path = tmp_path / "model.safetensors"
    path.write_bytes(header)
    with pytest.raises(CheckpointError, match=why):
        read_header(path)


def test_read_header_gives_shapes_and_dtypes_without_the_data(tmp_path):
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2, 3), "n": torch.zeros(4, dtype=torch.int64)}, tmp_path / "m")
    assert read_header(tmp_path / "m") == {"w": ((2, 3), "F32"), "n": ((4,), "I64")}
    meta = json.loads((tmp_path / "m").read_bytes()[8:].split(b"}}")[0] + b"}}")
    assert "w" in meta


@pytest.mark.slow
def test_a_huge_model_config_costs_no_memory(checkpoints, tmp_path):
    """Widths at their caps (a real model of them would need tens of GB): refused under a 3 GB
    address-space limit, in a fresh process."""
    bad = _with_config(
        checkpoints["seq2seq", "transformer"],
        tmp_path / "huge",
        lambda c: c["model"].update(embedding_dim=WIDTH_CAP, ff_dim=WIDTH_CAP),
    )
    script = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from attnkit.api.loading import load
        from attnkit.errors import CheckpointError
        try:
            load({str(bad)!r}, "cpu")
        except CheckpointError as exc:
            print(exc)
            sys.exit(0)
        sys.exit(1)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO_SRC), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-500:]
    assert "model.safetensors" in proc.stdout and "expects" in proc.stdout
