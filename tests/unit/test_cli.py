"""The ``attnkit`` command in-process: help texts, one-line errors with exit 2, and the files each
command writes."""

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from attnkit.checkpoint import read_json, read_tensors
from attnkit.cli import main
from attnkit.families.seq2seq.translator import Translator
from attnkit.viz import load_records

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TINY_MODEL = {
    "attention": "bahdanau",
    "embedding_dim": 8,
    "encoder_hidden": 8,
    "decoder_hidden": 16,
    "attention_dim": 8,
    "dropout": 0.0,
}
TINY_TRAIN = {"epochs": 2, "batch_size": 16, "threads": 1, "progress": False, "lr": 0.01}


def _reversal_tsv(path, n, seed, exclude=()):
    """``n`` distinct lines 'abc<TAB>cba' over a small alphabet, none of whose sources is in
    ``exclude``."""
    rng = random.Random(seed)
    seen, lines = set(exclude), []
    while len(lines) < n:
        s = "".join(rng.choice("abcde") for _ in range(rng.randint(1, 4)))
        if s not in seen:
            seen.add(s)
            lines.append(f"{s}\t{s[::-1]}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return seen


def _config(path, data, **sections):
    cfg = {
        "name": "tiny",
        "data": data,
        "model": dict(TINY_MODEL),
        "train": dict(TINY_TRAIN),
        "decode": {"beam_size": 2, "max_len_cap": 8},
    }
    for name, values in sections.items():
        cfg[name] = {**cfg.get(name, {}), **values} if isinstance(values, dict) else values
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _parallel_data(tmp):
    seen = _reversal_tsv(tmp / "train.tsv", 60, 1)
    seen = _reversal_tsv(tmp / "dev.tsv", 10, 2, seen)
    _reversal_tsv(tmp / "test.tsv", 10, 3, seen)
    return {
        "task": "parallel",
        "train": str(tmp / "train.tsv"),
        "dev": str(tmp / "dev.tsv"),
        "test": str(tmp / "test.tsv"),
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny model trained for 2 epochs by ``attnkit train`` on a parallel task; returns its run
    directory."""
    tmp = tmp_path_factory.mktemp("cli_model")
    cfg = _config(tmp / "exp.yaml", _parallel_data(tmp))
    assert main(["train", str(cfg), "--output-dir", str(tmp / "run")]) == 0
    return tmp / "run"


@pytest.fixture(autouse=True)
def torch_threads():
    """Restore torch's thread count after each test (translate, evaluate and plot set it)."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _fails(capsys, argv, *needles) -> str:
    """Run ``attnkit argv``: exit 2, one line 'attnkit: error: ...' on stderr containing every
    needle."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("attnkit: error: ")]
    assert len(errors) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert str(needle) in errors[0], (needle, errors[0])
    return errors[0]


# ---- help ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "command, options",
    [
        ([], ["demo", "train", "translate", "evaluate", "plot"]),
        (["demo"], ["--out", "--quick", "--attention", "--minutes", "--no-progress"]),
        (["train"], ["--set", "--output-dir", "--resume", "config"]),
        (
            ["translate"],
            [
                "--model",
                "--beam",
                "--alpha",
                "--n-best",
                "--attention-out",
                "--scores",
                "--device",
                "--threads",
            ],
        ),
        (["evaluate"], ["--model", "--split", "--beam", "--alpha", "--out", "--threads"]),
        (["plot"], ["--model", "--output", "--beam", "text", "--threads"]),
    ],
)
def test_help(capsys, command, options):
    with pytest.raises(SystemExit) as exit_:
        main(command + ["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: attnkit")
    for option in options:
        assert option in out


@pytest.mark.parametrize("command", ["demo", "train", "translate", "evaluate", "plot", "explain"])
def test_help_prints_no_escaped_percent_and_the_demo_budget(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "%%" not in out
    if command == "demo":
        assert "safety cap" in out and "2.25 minutes" not in out


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 2
    assert "usage" in capsys.readouterr().err


# ---- user errors: exit 2, one line ---------------------------------------------------------------
def test_translate_missing_model_dir(capsys, tmp_path):
    _fails(capsys, ["translate", "--model", tmp_path / "nope", "abc"], tmp_path / "nope")


def test_checkpoint_dir_missing_a_file(capsys, trained, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(trained / "best", broken)
    (broken / "tgt_vocab.json").unlink()
    _fails(capsys, ["translate", "--model", broken, "abc"], broken / "tgt_vocab.json")
    (broken / "meta.json").unlink()
    _fails(capsys, ["plot", "--model", broken, "abc", "-o", tmp_path / "x.png"], "meta.json")
    _fails(capsys, ["evaluate", "--model", broken], "meta.json")


def test_train_config_with_unknown_key(capsys, tmp_path):
    cfg = _config(tmp_path / "bad.yaml", {"task": "numbers"}, model={"hiden_size": 3})
    _fails(capsys, ["train", cfg], "hiden_size", cfg)


def test_train_with_unknown_override_key(capsys, tmp_path):
    cfg = _config(tmp_path / "ok.yaml", {"task": "numbers"})
    _fails(capsys, ["train", cfg, "--set", "train.epoch=3"], "'epoch'")
    _fails(capsys, ["train", cfg, "--set", "train.epochs"], "KEY=VALUE")


def test_train_with_invalid_yaml(capsys, tmp_path):
    cfg = tmp_path / "broken.yaml"
    cfg.write_text("name: x\nmodel: [unclosed\n")
    _fails(capsys, ["train", cfg], f"{cfg}:")


def test_train_with_missing_config(capsys, tmp_path):
    _fails(capsys, ["train", tmp_path / "none.yaml"], tmp_path / "none.yaml")


def test_train_tsv_line_without_tab(capsys, tmp_path):
    data = _parallel_data(tmp_path)
    bad = tmp_path / "train.tsv"
    lines = bad.read_text().splitlines(keepends=True)
    lines[2] = "no tab on this line\n"
    bad.write_text("".join(lines))
    cfg = _config(tmp_path / "exp.yaml", data, output_dir=str(tmp_path / "run"))
    _fails(capsys, ["train", cfg], f"{bad}:3")
    assert not (tmp_path / "run" / "best").exists()


def test_train_parallel_files_with_different_line_counts(capsys, tmp_path):
    data = _parallel_data(tmp_path)
    (tmp_path / "dev.src").write_text("ab\nba\ncab\n")
    (tmp_path / "dev.tgt").write_text("ba\nab\n")
    data["dev"] = [str(tmp_path / "dev.src"), str(tmp_path / "dev.tgt")]
    cfg = _config(tmp_path / "exp.yaml", data, output_dir=str(tmp_path / "run"))
    _fails(capsys, ["train", cfg], "dev.src", "dev.tgt", "3", "2")


def test_train_parallel_missing_file(capsys, tmp_path):
    data = _parallel_data(tmp_path)
    data["test"] = str(tmp_path / "missing.tsv")
    cfg = _config(tmp_path / "exp.yaml", data, output_dir=str(tmp_path / "run"))
    _fails(capsys, ["train", cfg], "missing.tsv")


def test_attention_out_with_bad_suffix(capsys, trained, tmp_path):
    _fails(
        capsys,
        ["translate", "--model", trained / "best", "abc", "--attention-out", tmp_path / "a.txt"],
        "a.txt",
        ".json",
    )


def test_train_with_max_src_len_one_is_a_clean_error(capsys, tmp_path):
    cfg = _config(tmp_path / "exp.yaml", _parallel_data(tmp_path), output_dir=str(tmp_path / "run"))
    _fails(capsys, ["train", cfg, "--set", "data.max_src_len=1"], "max_src_len")


def test_train_output_dir_named_like_a_number(capsys, tmp_path, monkeypatch):
    cfg = _config(
        tmp_path / "exp.yaml", _parallel_data(tmp_path), train={**TINY_TRAIN, "epochs": 1}
    )
    monkeypatch.chdir(tmp_path)
    assert main(["train", str(cfg), "--output-dir", "2024"]) == 0, capsys.readouterr().err
    assert (tmp_path / "2024" / "best" / "model.safetensors").is_file()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--beam", "0"], "--beam"),
        (["--beam", "2", "--n-best", "3"], "--n-best"),
    ],
)
def test_bad_decode_options(capsys, trained, argv, needle):
    _fails(capsys, ["translate", "--model", trained / "best", "abc", *argv], needle)


@pytest.mark.parametrize(
    "command", [["translate", "abc"], ["evaluate"], ["plot", "abc", "-o", "x.png"]]
)
def test_threads_below_one_is_a_one_line_error(capsys, trained, command):
    name, *rest = command
    _fails(
        capsys,
        [name, "--model", trained / "best", *rest, "--threads", "0"],
        "--threads must be at least 1, got 0",
    )


def test_translate_runs_on_the_threads_asked_for(capsys, trained, monkeypatch):
    """--threads N sets torch's threads; without it (nor OMP_NUM_THREADS) decoding uses one."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    torch.set_num_threads(2)
    assert main(["translate", "--model", str(trained / "best"), "abc"]) == 0
    assert torch.get_num_threads() == 1
    assert main(["translate", "--model", str(trained / "best"), "abc", "--threads", "3"]) == 0
    assert torch.get_num_threads() == 3
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_plot_bad_suffix_and_empty_input(capsys, trained, tmp_path):
    _fails(capsys, ["plot", "--model", trained / "best", "abc", "-o", tmp_path / "x.jpg"], "x.jpg")
    with pytest.warns(UserWarning, match=r"^1 blank input\(s\) \(line 1\) give blank outputs$"):
        assert main(["translate", "--model", str(trained / "best"), "", "abc"]) == 0
    out = capsys.readouterr().out
    assert out.split("\n")[0] == "" and len(out.splitlines()) == 2  # the blank line stays a line


@pytest.mark.parametrize(
    "override, key",
    [
        ("train.lr=-0.001", "train.lr"),
        ("train.lr=0", "train.lr"),
        ("train.lr=nan", "train.lr"),
        ("train.batch_size=0", "train.batch_size"),
        ("train.threads=-1", "train.threads"),
        ("train.max_minutes=0", "train.max_minutes"),
        ("train.max_minutes=-1", "train.max_minutes"),
        ("train.clip=-1", "train.clip"),
        ("decode.alpha=nan", "decode.alpha"),
        ("model.heads=8", "model.heads: applies only to attention multihead, not bahdanau"),
        (
            "model.input_feeding=false",
            "model.input_feeding: applies only to decoder luong, not bahdanau",
        ),
        ("data.max_number=99", "data.max_number: not a key of task parallel (its keys: "),
    ],
)
def test_train_bad_value_is_one_line_and_writes_nothing(capsys, tmp_path, override, key):
    cfg = _config(tmp_path / "exp.yaml", _parallel_data(tmp_path), output_dir=str(tmp_path / "run"))
    _fails(capsys, ["train", cfg, "--set", override], key, cfg)
    assert not (tmp_path / "run").exists()


def test_train_without_a_data_section(capsys, tmp_path):
    cfg = _config(tmp_path / "exp.yaml", None, output_dir=str(tmp_path / "run"))
    without = {k: v for k, v in yaml.safe_load(cfg.read_text()).items() if k != "data"}
    cfg.write_text(yaml.safe_dump(without))
    _fails(capsys, ["train", cfg], "data.task", cfg)  # it used to train the numbers task
    assert not (tmp_path / "run").exists()


def test_train_run_name_cannot_escape_runs(capsys, tmp_path, monkeypatch):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    cfg = _config(tmp_path / "exp.yaml", _parallel_data(tmp_path), name="../../escape")
    _fails(capsys, ["train", cfg], "name", "../../escape")
    assert not (tmp_path / "a" / "escape").exists() and not (work / "runs").exists()


def test_checkpoint_meta_without_family(capsys, trained, tmp_path):
    broken = tmp_path / "nofamily"
    shutil.copytree(trained / "best", broken)
    meta = json.loads((broken / "meta.json").read_text())
    del meta["family"]
    (broken / "meta.json").write_text(json.dumps(meta))
    for argv in (
        ["evaluate", "--model", broken],
        ["translate", "--model", broken, "abc"],
        ["plot", "--model", broken, "abc", "-o", tmp_path / "x.png"],
    ):
        _fails(capsys, argv, broken / "meta.json", "family")


@pytest.mark.parametrize("command", ["translate", "plot", "evaluate"])
@pytest.mark.parametrize("alpha", ["nan", "-1", "inf"])
def test_bad_alpha_is_one_line(capsys, trained, tmp_path, command, alpha):
    argv = {
        "translate": ["abc"],
        "plot": ["abc", "-o", tmp_path / "x.png"],
        "evaluate": ["--beam", "2"],
    }[command]
    model = ["--model", trained / "best"]
    _fails(capsys, [command, *model, *argv, "--alpha", alpha], "--alpha", alpha)
    assert not (tmp_path / "x.png").exists()


def test_translate_stdin_bytes_that_are_not_utf8(capsys, trained, tmp_path, monkeypatch):
    import io

    stdin = io.TextIOWrapper(io.BytesIO(b"abc\nb\xffa\n\xc3(\n"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    out_json = tmp_path / "att.json"
    warning = r"lines 2, 3: bytes that are not UTF-8 were replaced by U\+FFFD"
    with pytest.warns(UserWarning, match=warning):
        code = main(
            ["translate", "--model", str(trained / "best"), "-", "--attention-out", str(out_json)]
        )
    assert code == 0, capsys.readouterr().err
    assert len(capsys.readouterr().out.splitlines()) == 3
    sources = [r["source"] for r in json.loads(out_json.read_bytes().decode("utf-8"))["records"]]
    assert sources == ["abc", "b\ufffda", "\ufffd("]


def test_argv_bytes_that_are_not_utf8(capsys, trained, tmp_path):
    # what Python makes of argv bytes that are not UTF-8: lone surrogates (surrogateescape)
    bad = b"a\xffb".decode("utf-8", "surrogateescape")
    out_json, png = tmp_path / "att.json", tmp_path / "x.png"
    with pytest.warns(UserWarning, match=r"input 2: bytes that are not UTF-8"):
        assert (
            main(
                [
                    "translate",
                    "--model",
                    str(trained / "best"),
                    "abc",
                    bad,
                    "--attention-out",
                    str(out_json),
                ]
            )
            == 0
        )
    records = json.loads(out_json.read_bytes().decode("utf-8"))["records"]
    assert [r["source"] for r in records] == ["abc", "a\ufffdb"]
    with pytest.warns(UserWarning, match=r"input 1: bytes that are not UTF-8"):
        assert main(["plot", "--model", str(trained / "best"), bad, "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert "a\ufffdb ->" in capsys.readouterr().out


def test_real_process_with_bytes_that_are_not_utf8(trained, tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "OMP_NUM_THREADS": "1",
        "LC_ALL": "C.UTF-8",
    }
    out_json = tmp_path / "att.json"
    command = [
        sys.executable.encode(),
        b"-m",
        b"attnkit",
        b"translate",
        b"--model",
        bytes(trained / "best"),
    ]
    done = subprocess.run(
        command + [b"ab\xfe", b"--attention-out", bytes(out_json)],
        check=False,
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    assert b"attnkit: warning: input 1: bytes that are not UTF-8" in done.stderr
    json.loads(out_json.read_bytes().decode("utf-8"))
    stdin_run = subprocess.run(
        command + [b"-"],
        check=False,
        input=b"ab\xfe\nabc\n",
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert stdin_run.returncode == 0, stdin_run.stderr.decode(errors="replace")
    assert b"attnkit: warning: line 1: bytes that are not UTF-8" in stdin_run.stderr
    assert len(stdin_run.stdout.decode("utf-8").splitlines()) == 2


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda w: w.fill_(float("nan")), "holds NaN or infinite values"),
        (lambda w: w.long(), "dtype int64"),
    ],
)
def test_translate_refuses_nan_or_integer_weights(capsys, trained, tmp_path, change, needle):
    from safetensors.torch import load_file, save_file

    shutil.copytree(trained / "best", tmp_path / "best")
    path = tmp_path / "best" / "model.safetensors"
    state = load_file(str(path))
    state["decoder.output.weight"] = change(state["decoder.output.weight"])
    save_file(state, str(path))
    _fails(
        capsys,
        ["translate", "--model", tmp_path / "best", "abc"],
        path,
        "decoder.output.weight",
        needle,
    )


# ---- commands on a trained model -----------------------------------------------------------------
def test_train_wrote_checkpoints(trained):
    for name in ("best", "last"):
        assert (trained / name / "model.safetensors").is_file()
    state = json.loads((trained / "last" / "trainer.json").read_text())["state"]
    assert state["epoch"] == 2 and state["finished"]
    assert len(state["history"]) == 2


def test_translate_prints_outputs_and_writes_attention(capsys, trained, tmp_path):
    out_json = tmp_path / "att.json"
    assert (
        main(
            [
                "translate",
                "--model",
                str(trained / "best"),
                "abc",
                "de",
                "--attention-out",
                str(out_json),
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    assert "att.json" in captured.err
    records = load_records(out_json)
    assert [r.source for r in records] == ["abc", "de"]
    for r in records:
        assert r.weights.shape == (len(r.output_tokens), len(r.source_tokens))
    data = json.loads(out_json.read_text())
    assert data  # plain JSON


def test_translate_n_best_scores_and_npz(capsys, trained, tmp_path):
    out_npz = tmp_path / "att.npz"
    assert (
        main(
            [
                "translate",
                "--model",
                str(trained / "best"),
                "abc",
                "--beam",
                "3",
                "--n-best",
                "2",
                "--scores",
                "--attention-out",
                str(out_npz),
            ]
        )
        == 0
    )
    (line,) = capsys.readouterr().out.splitlines()
    fields = line.split("\t")
    assert len(fields) == 4  # two outputs, each followed by its score
    float(fields[1]), float(fields[3])
    assert out_npz.read_bytes()[:2] == b"PK"
    (record,) = load_records(out_npz)
    assert record.source == "abc"


def test_translate_reads_stdin(capsys, trained, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("abc\nba\n"))
    assert main(["translate", "--model", str(trained / "best"), "-"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_plot_writes_png(capsys, trained, tmp_path):
    png = tmp_path / "heat.png"
    assert main(["plot", "--model", str(trained / "best"), "abcd", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert "heatmap" in capsys.readouterr().out


def test_plot_writes_svg(trained, tmp_path):
    svg = tmp_path / "heat.svg"
    assert (
        main(["plot", "--model", str(trained / "best"), "ab", "-o", str(svg), "--beam", "2"]) == 0
    )
    assert "<svg" in svg.read_text()


def test_evaluate_writes_scores_hyps_and_report(capsys, trained, tmp_path):
    out = tmp_path / "eval"
    argv = ["evaluate", "--model", trained / "best", "--split", "dev", "--beam", "2", "--out", out]
    argv += ["--data-dir", trained.parent]  # the split's file by its training name
    assert main([str(a) for a in argv]) == 0
    table = capsys.readouterr().out
    scores = json.loads((out / "scores.json").read_text())
    assert scores["split"] == "dev" and scores["task"] == "parallel"
    assert scores["metric"] == "exact_match" and scores["higher_is_better"] is True
    assert scores["backend"].startswith("backend: native (")  # decode.backend auto on the CPU
    for name in ("greedy", "beam2"):
        assert 0.0 <= scores[name]["exact_match"] <= 100.0
        assert scores[name]["items"] == 10
        assert len((out / f"hyps.{name}.txt").read_text().splitlines()) == 10
    # a table for a person: what was scored, a row per decoding, where the files are
    lines = table.strip().splitlines()
    assert "on dev (parallel, 10 items): exact_match decides, higher is better" in lines[0]
    assert lines[1].split() == ["decoding", "exact_match", "inputs/s"]
    for line, name in zip(lines[2:4], ("greedy", "beam2")):
        assert line.split()[:2] == [name, f"{scores[name]['exact_match']:.2f}"]
    assert lines[-1].endswith(str(out))
    # the same scores as one JSON line with --json
    assert main([str(a) for a in argv + ["--json"]]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["out"] == str(out)
    for name in ("greedy", "beam2"):
        assert printed[name]["exact_match"] == scores[name]["exact_match"]
    records = load_records(out / "attention.json")
    assert len(records) == 10 and all(r.reference is not None for r in records)
    # the report's examples: every error first, then the right ones, each in the order decoded
    hyps = (out / "hyps.greedy.txt").read_text().splitlines()
    dev = (trained.parent / "dev.tsv").read_text().splitlines()
    refs = [line.split("\t")[1] for line in dev]  # 10 distinct sources, one reference each
    right = [h == r for h, r in zip(hyps, refs)]
    wrong_first = sorted(range(10), key=lambda i: right[i])
    assert [r.index for r in records] == wrong_first
    assert [r.right for r in records] == [right[i] for i in wrong_first]
    assert all(r.output == hyps[r.index] and r.chrf is None for r in records)  # exact, no chrF
    page = (out / "report.html").read_text()
    assert f'<span class="tally">{right.count(False)} wrong of 10</span>' in page
    assert np.all(
        [r.weights.shape == (len(r.output_tokens), len(r.source_tokens)) for r in records]
    )


def test_evaluate_writes_beside_the_checkpoint_where_the_next_save_leaves_it(capsys, trained):
    argv = ["evaluate", "--model", str(trained / "best"), "--split", "dev", "--beam", "1", "--json"]
    assert main(argv + ["--data-dir", str(trained.parent)]) == 0
    out = trained / "eval" / "best-dev"
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["out"] == str(out)
    scores = (out / "scores.json").read_bytes()
    best = trained / "best"
    state = read_json(best / "trainer.json")
    assert read_tensors(best / "trainer.safetensors", required=False) is None  # last has them
    Translator.load(best, "cpu").save(best, state)  # what the next training save does
    assert (out / "scores.json").read_bytes() == scores
    assert not (trained / "best" / "eval-dev").exists()


def test_evaluate_and_translate_an_ensemble(capsys, trained):
    models = [str(trained / "best"), str(trained / "last")]
    repeated = ["--model", models[0], "--model", models[1]]
    data_dir = ["--data-dir", str(trained.parent)]
    assert main(["evaluate", *repeated, "--split", "dev", "--beam", "2", "--json", *data_dir]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    out = trained / "eval" / "best-dev-ensemble2"  # the default directory names the ensemble
    scores = json.loads((out / "scores.json").read_text())
    assert scores["model"] == models and printed["out"] == str(out)
    assert scores["attention"] == [scores["attention"][0]] * 2  # one entry per member
    for name in ("greedy", "beam2"):
        assert scores[name]["items"] == 10
        assert len((out / f"hyps.{name}.txt").read_text().splitlines()) == 10
    assert main(["translate", *repeated, "ab", "abc"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


def test_ensemble_of_a_vision_checkpoint_is_refused(capsys, tmp_path):
    from attnkit.checkpoint import write_checkpoint

    vision = write_checkpoint(tmp_path / "vis", "vision", {"w": torch.zeros(1)}, {})
    _fails(capsys, ["evaluate", "--model", vision, "--model", vision], "ensembles are for seq2seq")


def test_a_demo_of_another_attention_gets_its_own_directory(monkeypatch):
    """attnkit demo --attention X writes runs/demo-X unless --out says otherwise, so a second
    demo never replaces the first (runs/demo)."""
    import attnkit.demo

    seen = []
    monkeypatch.setattr(attnkit.demo, "run_demo", lambda out, **kw: seen.append(Path(out)))
    for argv in (["demo"], ["demo", "--attention", "luong-general"], ["demo", "--out", "x"]):
        assert main(argv) == 0
    assert seen == [Path("runs/demo"), Path("runs/demo-luong-general"), Path("x")]


def test_translate_reads_the_lines_of_an_input_file(tmp_path, trained, capsys):
    model = str(trained / "best")
    texts = ["abc", "", "edd"]
    path = tmp_path / "inputs.txt"
    path.write_bytes(("\n".join(texts) + "\n").encode())
    assert main(["translate", "--model", model, "-i", str(path)]) == 0
    from_file = capsys.readouterr().out.splitlines()
    assert main(["translate", "--model", model, texts[0], texts[2]]) == 0
    from_args = capsys.readouterr().out.splitlines()
    assert from_file == [from_args[0], "", from_args[1]]  # a blank line gives a blank line
    # a file given as TEXT is translated as the text it is, with one line saying what -i does
    assert main(["translate", "--model", model, str(path)]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1
    assert captured.err.strip() == (
        f"note: {str(path)!r} is a file, translated here as a text; '--input {path}' translates "
        "its lines"
    )
    assert main(["translate", "--model", model, texts[0]]) == 0
    assert capsys.readouterr().err == ""  # a word that names no file: no note
    for argv, needle in (
        (["-i", str(tmp_path / "missing.txt")], "missing.txt: no such file"),
        (["-i", str(tmp_path)], "cannot read"),
        (["-i", str(path), "vier"], "not both"),
    ):
        assert main(["translate", "--model", model, *argv]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1


def test_evaluate_draws_no_progress_bar_into_a_redirected_stderr(trained, tmp_path, capsys):
    """A bar is for a terminal: stderr captured (as in a log file or a pipe) gets none."""
    out = tmp_path / "eval"
    data_dir = ["--data-dir", str(trained.parent)]
    assert main(["evaluate", "--model", str(trained / "best"), "--out", str(out), *data_dir]) == 0
    err = capsys.readouterr().err
    assert "decoding" not in err and "\r" not in err


def test_a_write_that_fails_is_one_line_naming_the_file(tmp_path, trained, capsys):
    """A place that cannot be written (under a regular file; a full disk, as /dev/full) is one
    line naming the path, for every command that writes; an OSError that is not about a file
    keeps its traceback (a bug)."""
    model = trained / "best"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    full = tmp_path / "full.png"
    full.symlink_to("/dev/full")
    _fails(capsys, ["plot", "--model", model, "abc", "-o", blocker / "x.png"], "a-file")
    _fails(capsys, ["plot", "--model", model, "abc", "-o", full], "full.png", "space")
    _fails(
        capsys,
        ["translate", "--model", model, "abc", "--attention-out", blocker / "x.json"],
        "a-file",
    )
    _fails(capsys, ["explain", "--model", model, "abc", "--out", blocker / "e"], "a-file")
    argv = ["evaluate", "--model", model, "--beam", "1", "--out", blocker / "e"]
    _fails(capsys, argv + ["--data-dir", trained.parent], "a-file")


def test_an_oserror_that_names_no_file_keeps_its_traceback(monkeypatch):
    import errno

    from attnkit.cli import translate

    def broken(args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(translate, "run", broken)
    with pytest.raises(OSError):
        main(["translate", "--model", "x", "abc"])
