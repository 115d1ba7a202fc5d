"""The ``attnkit`` command in-process: help texts, one-line errors with exit 2, and the files each command writes."""

import json
import random
import shutil

import numpy as np
import pytest
import torch
import yaml

from attnkit.cli import main
from attnkit.viz import load_records

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TINY_MODEL = {"attention": "bahdanau", "embedding_dim": 8, "encoder_hidden": 8, "decoder_hidden": 16,
              "attention_dim": 8, "dropout": 0.0}
TINY_TRAIN = {"epochs": 2, "batch_size": 16, "threads": 1, "progress": False, "lr": 0.01}


def _reversal_tsv(path, n, seed, exclude=()):
    """``n`` distinct lines 'abc<TAB>cba' over a small alphabet, none of whose sources is in ``exclude``."""
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
    cfg = {"name": "tiny", "data": data, "model": dict(TINY_MODEL), "train": dict(TINY_TRAIN),
           "decode": {"beam_size": 2, "max_len_cap": 8}}
    for name, values in sections.items():
        cfg[name] = {**cfg.get(name, {}), **values} if isinstance(values, dict) else values
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _parallel_data(tmp):
    seen = _reversal_tsv(tmp / "train.tsv", 60, 1)
    seen = _reversal_tsv(tmp / "dev.tsv", 10, 2, seen)
    _reversal_tsv(tmp / "test.tsv", 10, 3, seen)
    return {"task": "parallel", "train": str(tmp / "train.tsv"), "dev": str(tmp / "dev.tsv"),
            "test": str(tmp / "test.tsv")}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny model trained for 2 epochs by ``attnkit train`` on a parallel task; returns its run directory."""
    tmp = tmp_path_factory.mktemp("cli_model")
    cfg = _config(tmp / "exp.yaml", _parallel_data(tmp))
    assert main(["train", str(cfg), "--output-dir", str(tmp / "run")]) == 0
    return tmp / "run"


def _fails(capsys, argv, *needles) -> str:
    """Run ``attnkit argv``: exit 2, one line 'attnkit: error: ...' on stderr containing every needle."""
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


# ---- help -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command, options", [
    ([], ["demo", "train", "translate", "evaluate", "plot"]),
    (["demo"], ["--out", "--quick", "--attention", "--minutes", "--no-progress"]),
    (["train"], ["--set", "--output-dir", "--resume", "config"]),
    (["translate"], ["--model", "--beam", "--alpha", "--n-best", "--attention-out", "--scores", "--device"]),
    (["evaluate"], ["--model", "--split", "--beam", "--alpha", "--out"]),
    (["plot"], ["--model", "--output", "--beam", "text"]),
])
def test_help(capsys, command, options):
    with pytest.raises(SystemExit) as exit_:
        main(command + ["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: attnkit")
    for option in options:
        assert option in out


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 2
    assert "usage" in capsys.readouterr().err


# ---- user errors: exit 2, one line ----------------------------------------------------------------------
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
    _fails(capsys, ["translate", "--model", trained / "best", "abc", "--attention-out", tmp_path / "a.txt"],
           "a.txt", ".json")


def test_train_with_max_src_len_one_is_a_clean_error(capsys, tmp_path):
    cfg = _config(tmp_path / "exp.yaml", _parallel_data(tmp_path), output_dir=str(tmp_path / "run"))
    _fails(capsys, ["train", cfg, "--set", "data.max_src_len=1"], "max_src_len")


def test_train_output_dir_named_like_a_number(capsys, tmp_path, monkeypatch):
    cfg = _config(tmp_path / "exp.yaml", _parallel_data(tmp_path), train={**TINY_TRAIN, "epochs": 1})
    monkeypatch.chdir(tmp_path)
    assert main(["train", str(cfg), "--output-dir", "2024"]) == 0, capsys.readouterr().err
    assert (tmp_path / "2024" / "best" / "model.safetensors").is_file()


@pytest.mark.parametrize("argv, needle", [
    (["--beam", "0"], "--beam"),
    (["--beam", "2", "--n-best", "3"], "--n-best"),
])
def test_bad_decode_options(capsys, trained, argv, needle):
    _fails(capsys, ["translate", "--model", trained / "best", "abc", *argv], needle)


def test_plot_bad_suffix_and_empty_input(capsys, trained, tmp_path):
    _fails(capsys, ["plot", "--model", trained / "best", "abc", "-o", tmp_path / "x.jpg"], "x.jpg")
    _fails(capsys, ["translate", "--model", trained / "best", ""], "empty")


@pytest.mark.parametrize("change, needle", [
    (lambda w: w.fill_(float("nan")), "holds NaN or infinite values"),
    (lambda w: w.long(), "dtype int64"),
])
def test_translate_refuses_nan_or_integer_weights(capsys, trained, tmp_path, change, needle):
    from safetensors.torch import load_file, save_file

    shutil.copytree(trained / "best", tmp_path / "best")
    path = tmp_path / "best" / "model.safetensors"
    state = load_file(str(path))
    state["decoder.output.weight"] = change(state["decoder.output.weight"])
    save_file(state, str(path))
    _fails(capsys, ["translate", "--model", tmp_path / "best", "abc"], path,
           "decoder.output.weight", needle)


# ---- commands on a trained model -------------------------------------------------------------------------
def test_train_wrote_checkpoints(trained):
    for name in ("best", "last"):
        assert (trained / name / "model.safetensors").is_file()
    state = json.loads((trained / "last" / "trainer.json").read_text())["state"]
    assert state["epoch"] == 2 and state["finished"]
    assert len(state["history"]) == 2


def test_translate_prints_outputs_and_writes_attention(capsys, trained, tmp_path):
    out_json = tmp_path / "att.json"
    assert main(["translate", "--model", str(trained / "best"), "abc", "de", "--attention-out", str(out_json),
                 "--device", "cpu"]) == 0
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
    assert main(["translate", "--model", str(trained / "best"), "abc", "--beam", "3", "--n-best", "2", "--scores",
                 "--attention-out", str(out_npz)]) == 0
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
    assert main(["plot", "--model", str(trained / "best"), "ab", "-o", str(svg), "--beam", "2"]) == 0
    assert "<svg" in svg.read_text()


def test_evaluate_writes_scores_hyps_and_report(capsys, trained, tmp_path):
    out = tmp_path / "eval"
    assert main(["evaluate", "--model", str(trained / "best"), "--split", "dev", "--beam", "2", "--out",
                 str(out)]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    scores = json.loads((out / "scores.json").read_text())
    assert scores["split"] == "dev" and scores["task"] == "parallel"
    for name in ("greedy", "beam2"):
        assert 0.0 <= scores[name]["exact_match"] <= 100.0
        assert scores[name]["items"] == 10
        assert len((out / f"hyps.{name}.txt").read_text().splitlines()) == 10
        assert printed[name]["exact_match"] == scores[name]["exact_match"]
    records = load_records(out / "attention.json")
    assert len(records) == 10 and all(r.reference is not None for r in records)
    assert "<html" in (out / "report.html").read_text().lower()
    assert np.all([r.weights.shape == (len(r.output_tokens), len(r.source_tokens)) for r in records])


def test_evaluate_and_translate_an_ensemble(capsys, trained):
    models = [str(trained / "best"), str(trained / "last")]
    repeated = ["--model", models[0], "--model", models[1]]
    assert main(["evaluate", *repeated, "--split", "dev", "--beam", "2"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    out = trained / "best" / "eval-dev-ensemble2"  # the default directory names the ensemble
    scores = json.loads((out / "scores.json").read_text())
    assert scores["model"] == models and printed["out"] == str(out)
    assert scores["attention"] == [scores["attention"][0]] * 2  # one entry per member
    for name in ("greedy", "beam2"):
        assert scores[name]["items"] == 10
        assert len((out / f"hyps.{name}.txt").read_text().splitlines()) == 10
    assert main(["translate", *repeated, "ab", "abc"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


def test_ensemble_of_a_vision_checkpoint_is_refused(capsys, tmp_path):
    from attnkit.training.checkpoint import write_checkpoint

    vision = write_checkpoint(tmp_path / "vis", "vision", {"w": torch.zeros(1)}, {})
    _fails(capsys, ["evaluate", "--model", vision, "--model", vision], "ensembles are for seq2seq")
