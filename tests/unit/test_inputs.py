"""``attnkit evaluate`` on the user's own files (--src/--ref, --tsv) and on a split by name, from
any working directory: a checkpoint needs none of its training files to decode and score, and a
split is read where this machine says (--data-dir), never from the checkpoint's own paths."""

import json
import random
import shutil

import pytest
import torch
import yaml

from attnkit.cli import main
from attnkit.errors import AttnkitError
from attnkit.evaluation.inputs import EvalFiles

TINY = {
    "name": "tiny",
    "model": {
        "embedding_dim": 8,
        "encoder_hidden": 8,
        "decoder_hidden": 16,
        "attention_dim": 8,
        "dropout": 0.0,
    },
    "train": {"epochs": 2, "batch_size": 16, "threads": 1, "progress": False, "lr": 0.01},
    "decode": {"beam_size": 2, "max_len_cap": 8},
}


def _pairs(n, seed, exclude=()):
    """``n`` distinct (source, reversed source) pairs over a small alphabet."""
    rng, seen, pairs = random.Random(seed), set(exclude), []
    while len(pairs) < n:
        s = "".join(rng.choice("abcde") for _ in range(rng.randint(1, 4)))
        if s not in seen:
            seen.add(s)
            pairs.append((s, s[::-1]))
    return pairs


def _tsv(path, pairs):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A project whose experiment file names its data relative to itself, trained from the
    project's root by ``attnkit train configs/exp.yaml`` with ``metric: cer``; returns the root."""
    root = tmp_path_factory.mktemp("project")
    train = _pairs(60, 1)
    dev = _pairs(10, 2, {s for s, _ in train})
    test = _pairs(10, 3, {s for s, _ in train + dev})
    for name, pairs in (("train", train), ("dev", dev), ("test", test)):
        _tsv(root / "configs" / "data" / f"{name}.tsv", pairs)
    data = {"task": "parallel", "metric": "cer"}
    data.update({name: f"data/{name}.tsv" for name in ("train", "dev", "test")})
    (root / "configs" / "exp.yaml").write_text(yaml.safe_dump({**TINY, "data": data}))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)  # runs/tiny is the root's; the data is read beside the file
        assert main(["train", "configs/exp.yaml"]) == 0
    return root


@pytest.fixture(autouse=True)
def torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _fails(capsys, argv, *needles) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    errors = [line for line in err.splitlines() if line.startswith("attnkit: error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert str(needle) in errors[0], (needle, errors[0])
    return errors[0]


def test_the_checkpoint_stores_its_data_paths_absolute(project):
    saved = yaml.safe_load((project / "runs" / "tiny" / "best" / "config.yaml").read_text())
    assert saved["data"]["test"] == str(project / "configs" / "data" / "test.tsv")
    assert saved["data"]["metric"] == "cer"


def test_evaluate_src_ref_from_another_directory_without_the_training_data(
    capsys, project, tmp_path, monkeypatch
):
    """The user's own test set, which the config never named, scored from elsewhere with the
    training files gone: the same scores as the split they hold."""
    best = project / "runs" / "tiny" / "best"
    lines = (project / "configs" / "data" / "test.tsv").read_text().splitlines()
    pairs = [tuple(line.split("\t")) for line in lines]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "test.src").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    (mine / "test.ref").write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
    by_split = tmp_path / "by_split"
    data_dir = ["--data-dir", str(project / "configs" / "data")]
    assert (
        main(["evaluate", "--model", str(best), "--beam", "2", "--out", str(by_split)] + data_dir)
        == 0
    )
    capsys.readouterr()
    data = project / "configs" / "data"
    hidden = tmp_path / "hidden"
    shutil.move(data, hidden)  # nothing of the training data is left to read
    try:
        monkeypatch.chdir(mine)
        argv = ["evaluate", "--model", str(best), "--src", "test.src", "--ref", "test.ref"]
        assert main(argv + ["--beam", "2"]) == 0
        table = capsys.readouterr().out
    finally:
        shutil.move(hidden, data)
    out = project / "runs" / "tiny" / "eval" / "best-test.src"  # named after the file
    scores = json.loads((out / "scores.json").read_text())
    expected = json.loads((by_split / "scores.json").read_text())
    assert scores["split"] is None
    assert scores["files"] == {"src": str(mine / "test.src"), "ref": str(mine / "test.ref")}
    assert scores["metric"] == "cer" and scores["higher_is_better"] is False
    for name in ("greedy", "beam2"):
        for key in ("cer", "wer", "bleu", "chrf", "exact_match", "sentences"):
            assert scores[name][key] == expected[name][key], (name, key)
        hyps = (out / f"hyps.{name}.txt").read_text()
        assert hyps == (by_split / f"hyps.{name}.txt").read_text()
    assert (out / "report.html").is_file()
    assert "cer decides, lower is better" in table.splitlines()[0]


def test_evaluate_tsv_and_split_from_another_directory(capsys, project, tmp_path, monkeypatch):
    """--split test reads the split's file by its training name in --data-dir, from any
    directory; --tsv reads the file named."""
    monkeypatch.chdir(tmp_path)
    best = project / "runs" / "tiny" / "best"
    out_split, out_tsv = tmp_path / "split", tmp_path / "tsv"
    argv = ["evaluate", "--model", str(best), "--beam", "1", "--out", str(out_split)]
    assert main(argv + ["--data-dir", str(project / "configs" / "data")]) == 0
    tsv = project / "configs" / "data" / "test.tsv"
    argv = ["evaluate", "--model", str(best), "--tsv", str(tsv), "--beam", "1", "--json"]
    assert main(argv + ["--out", str(out_tsv)]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    split = json.loads((out_split / "scores.json").read_text())
    assert split["split"] == "test" and printed["files"] == {"tsv": str(tsv)}
    assert printed["greedy"]["cer"] == split["greedy"]["cer"]


def test_translate_and_plot_never_read_the_training_data(capsys, project, tmp_path, monkeypatch):
    data = project / "configs" / "data"
    hidden = tmp_path / "hidden"
    shutil.move(data, hidden)
    try:
        monkeypatch.chdir(tmp_path)
        best = str(project / "runs" / "tiny" / "best")
        assert main(["translate", "--model", best, "abc"]) == 0
        assert main(["plot", "--model", best, "abc", "-o", "att.pdf"]) == 0
    finally:
        shutil.move(hidden, data)
    assert (tmp_path / "att.pdf").read_bytes().startswith(b"%PDF")


def test_a_missing_split_file_says_which_and_how_to_score_other_files(capsys, project, tmp_path):
    best = project / "runs" / "tiny" / "best"
    argv = ["evaluate", "--model", best, "--data-dir", tmp_path]  # no test.tsv there
    _fails(capsys, argv, tmp_path / "test.tsv", "file not found", "--src FILE --ref FILE")
    _fails(capsys, ["evaluate", "--model", best], "test.tsv", "--data-dir", "--src FILE --ref FILE")


def test_a_split_is_never_read_from_the_checkpoint_s_own_paths(capsys, project, tmp_path):
    """A crafted checkpoint whose data.test (and a downloaded data set's data.directory) names
    a folder elsewhere: nothing there is read or written; --data-dir is."""
    crafted = tmp_path / "crafted"
    shutil.copytree(project / "runs" / "tiny" / "best", crafted)
    elsewhere = tmp_path / "elsewhere"
    _tsv(elsewhere / "test.tsv", _pairs(7, 9))
    saved = yaml.safe_load((crafted / "config.yaml").read_text())
    saved["data"]["test"] = str(elsewhere / "test.tsv")
    (crafted / "config.yaml").write_text(yaml.safe_dump(saved))
    _fails(capsys, ["evaluate", "--model", crafted, "--beam", "1"], "test.tsv", "--data-dir")
    mine = tmp_path / "mine"
    _tsv(mine / "test.tsv", _pairs(3, 4))
    argv = ["evaluate", "--model", crafted, "--beam", "1", "--data-dir", mine, "--out"]
    assert main([str(a) for a in argv + [tmp_path / "eval"]]) == 0
    assert len((tmp_path / "eval" / "hyps.greedy.txt").read_text().splitlines()) == 3
    # a downloaded data set's folder (with download on): neither read nor written into
    saved["data"] = {"task": "g2p", "directory": str(elsewhere), "download": True}
    saved["data"].update(src_level="char", tgt_level="char")
    (crafted / "config.yaml").write_text(yaml.safe_dump(saved))
    before = sorted(p.name for p in elsewhere.iterdir())
    err = _fails(capsys, ["evaluate", "--model", crafted, "--data-dir", mine])
    assert str(elsewhere) not in err and str(mine) in err
    assert sorted(p.name for p in elsewhere.iterdir()) == before


def test_split_pairs_follows_the_machine_s_data_directory(monkeypatch, tmp_path):
    """A loaded checkpoint's data section as read: the data directory is data_dir, else null
    ($ATTNKIT_DATA_DIR/<name>); download is off; a parallel split is its file by name in
    data_dir."""
    from attnkit.data.tasks.settings import Multi30kData, ParallelData
    from attnkit.evaluation import inputs

    seen = []
    monkeypatch.setattr(inputs, "build_split", lambda data, split: seen.append(data) or [])
    stored = Multi30kData(directory="/somewhere/else", download=True)
    inputs.split_pairs(stored, "test")
    inputs.split_pairs(stored, "dev", tmp_path)
    assert [(d.directory, d.download) for d in seen] == [(None, False), (str(tmp_path), False)]
    assert stored.directory == "/somewhere/else"  # the loaded config itself is left as it was
    mine = ParallelData(train="/a/train.tsv", dev="/a/dev.tsv", test=["/a/t.de", "/a/t.en"])
    inputs.split_pairs(mine, "test", tmp_path)
    assert seen[-1].test == [str(tmp_path / "t.de"), str(tmp_path / "t.en")]
    with pytest.raises(inputs.DataError, match="t.de and t.en from: give --data-dir"):
        inputs.split_pairs(mine, "test")


@pytest.mark.parametrize(
    "src, ref, needles",
    [
        ("a\nb\nc\n", "a\nb\n", ["3 lines", "2", "one line per pair"]),
        (b"ab\n\xff\xfe\n", "a\nb\n", ["test.src:2", "not valid UTF-8"]),
        ("a\n\nb\n", "a\nb\nc\n", ["test.src:2", "empty line"]),
        (None, "a\n", ["test.src", "file not found"]),
    ],
)
def test_bad_test_files_are_one_line_naming_the_file(capsys, project, tmp_path, src, ref, needles):
    if src is not None:
        (tmp_path / "test.src").write_bytes(src if isinstance(src, bytes) else src.encode())
    (tmp_path / "test.ref").write_text(ref, encoding="utf-8")
    best = project / "runs" / "tiny" / "best"
    argv = ["evaluate", "--model", best, "--src", tmp_path / "test.src"]
    _fails(capsys, argv + ["--ref", tmp_path / "test.ref"], *needles)


def test_src_and_ref_go_together_and_exclude_tsv(capsys, project, tmp_path):
    best = project / "runs" / "tiny" / "best"
    _fails(capsys, ["evaluate", "--model", best, "--src", "a.src"], "--ref FILE is missing")
    _fails(capsys, ["evaluate", "--model", best, "--ref", "a.ref"], "--src FILE is missing")
    argv = ["evaluate", "--model", best, "--tsv", "a.tsv", "--src", "a.src", "--ref", "b"]
    _fails(capsys, argv, "not both")
    with pytest.raises(AttnkitError, match="not both"):
        EvalFiles(tsv="a.tsv", src="a.src")


def test_files_are_for_seq2seq_checkpoints(capsys, tmp_path):
    from attnkit.checkpoint import write_checkpoint

    vision = write_checkpoint(tmp_path / "vis", "vision", {"w": torch.zeros(1)}, {})
    _fails(capsys, ["evaluate", "--model", vision, "--tsv", "x.tsv"], "--tsv", "seq2seq")


def test_a_checkpoint_from_before_scores_as_it_did(capsys, project, tmp_path, monkeypatch):
    """A checkpoint written before data.metric and absolute paths: its config holds no metric and
    the paths as written, relative to the directory training ran in. It scores by exact match,
    its --split read by file name from --data-dir (a relative one from the current directory)."""
    old = tmp_path / "old"
    shutil.copytree(project / "runs" / "tiny" / "best", old)
    saved = yaml.safe_load((old / "config.yaml").read_text())
    del saved["data"]["metric"]
    for split in ("train", "dev", "test"):
        saved["data"][split] = f"configs/data/{split}.tsv"
    (old / "config.yaml").write_text(yaml.safe_dump(saved))
    monkeypatch.chdir(project)
    argv = ["evaluate", "--model", str(old), "--beam", "1", "--json"]
    assert main(argv + ["--data-dir", "configs/data"]) == 0
    scores = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["metric"] == "exact_match" and set(scores["greedy"]) == {
        "exact_match",
        "items",
        "decode_s",
        "inputs_per_s",
    }
    monkeypatch.chdir(tmp_path)  # elsewhere the relative folder holds no test.tsv
    argv = ["evaluate", "--model", old, "--data-dir", "configs/data"]
    _fails(capsys, argv, "configs/data/test.tsv", "--src FILE --ref FILE")
