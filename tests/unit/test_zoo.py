"""The model zoo: every model loads by ``zoo:NAME`` and scores on its test set what its row of
``index.json`` says (the score benchmarks/zoo.py measured when it trained it); ``--model
zoo:NAME`` works where a checkpoint is accepted; ``attnkit zoo`` lists them; ``attnkit serve``
alone serves two of them side by side and one of each other family."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

import attnkit
from attnkit import zoo
from attnkit.cli import build_parser, main
from attnkit.data.tasks.registry import build_splits, task_metric
from attnkit.errors import CheckpointError
from attnkit.evaluation.summary import SIZES
from attnkit.families.seq2seq.evaluate import evaluate_translator

NAMES = zoo.names()
#: how far a zoo model's test score (in points) may lie from its float32 weights' score, measured
#: by benchmarks/zoo.py before it stored them as float16
HALF_TOLERANCE = 0.5


def test_the_zoo_ships_the_models_serve_opens_and_stays_small():
    assert set(zoo.SIDE_BY_SIDE) <= set(NAMES)
    from attnkit.checkpoint.shards import weight_files

    size = sum(f.stat().st_size for f in zoo.MODELS.rglob("*") if f.is_file())
    # the translator's 9.4M float16 weights are most of it: a wheel of ~30 MB beside torch's
    assert size < 32 * 2**20, f"the zoo is {size / 2**20:.1f} MiB"
    for name in NAMES:
        assert all(f.is_file() for f in weight_files(zoo.MODELS / name))
        assert not (zoo.MODELS / name / "trainer.safetensors").exists()  # no optimizer state
    for file in zoo.MODELS.rglob("*"):  # no file of the repository is over 2 MB
        assert file.stat().st_size < 2_000_000, f"{file} is over 2 MB"


def test_serve_opens_one_zoo_model_of_each_family_the_zoo_holds():
    from attnkit.families import FAMILIES

    held = {json.loads((zoo.MODELS / n / "meta.json").read_text())["family"] for n in NAMES}
    served = {
        json.loads((zoo.MODELS / n / "meta.json").read_text())["family"] for n in zoo.served()
    }
    assert served == held and held <= set(FAMILIES)
    assert zoo.served()[:2] == list(zoo.SIDE_BY_SIDE)


def test_the_zoo_has_a_reader_and_a_recurrent_attention_model():
    types = {zoo.index()[name]["config"] for name in NAMES}
    assert {"configs/ram_mnist28.yaml", "configs/sat_multidigit.yaml"} <= types


#: the seq2seq tasks read from $ATTNKIT_DATA_DIR, and the folder each reads there
SHARED_TASKS = {"multi30k": "multi30k", "g2p": "cmudict"}


def _seq2seq_score(model, shared_data) -> tuple[str, int, float]:
    data = model.translator.config.data
    if data.task in SHARED_TASKS:
        shared_data(SHARED_TASKS[data.task])  # skips, saying so, when the data set is absent
    metric = task_metric(data)
    scores = evaluate_translator(model.translator, metric.family, build_splits(data).test)[0]
    size = next(scores[size] for size in SIZES if size in scores)  # G2P counts words
    return metric.key, size, scores[metric.key]


def _vision_score(model, shared_data) -> tuple[str, int, float]:
    from attnkit.families.vision.evaluate import score_vision

    shared_data("mnist")  # skips, saying so, without $ATTNKIT_DATA_DIR/mnist
    loaded = (model.config, model.kind, model.net)
    scores = score_vision(model.path, "test", loaded=loaded).scores
    return "accuracy", scores["images"], 100 * scores["accuracy"]  # a fraction: in percent


def _graph_score(model, shared_data) -> tuple[str, int, float]:
    graph, data = model.graph, model.data  # carried by the checkpoint (with its self-loops)
    with torch.no_grad():
        predicted = model.net(data.x, data.edge_index)[0].argmax(-1)  # (N,)
    test = graph.masks["test"]
    right = int((predicted[test] == graph.y[test]).sum())
    return "accuracy", int(test.sum()), 100 * right / int(test.sum())


def _text_score(model, shared_data) -> tuple[str, int, float]:
    from attnkit.data.tasks.text import TextData

    shared_data("sst")
    data = TextData(model.config.data)
    examples = data.split("test")
    words = [e.words for e in examples]
    predicted = model.classify([" ".join(w) for w in words], words=words)
    right = sum(p.label == data.labels[e.label] for p, e in zip(predicted, examples))
    return "accuracy", len(examples), 100 * right / len(examples)


def _memnet_score(model, shared_data) -> tuple[str, int, float]:
    from attnkit.data.babi import load_splits

    shared_data("babi")
    questions = load_splits(model.config.data).split("test")
    answers = model.answer_questions(questions)
    wrong = sum(a.answer != q.answer for a, q in zip(answers, questions))
    return "mean_error_pct", len(questions), 100 * wrong / len(questions)


def _pointer_score(model, shared_data) -> tuple[str, int, float]:
    from attnkit.data.tasks.pointer import make_split

    def from_lowest(order) -> list[int]:  # a hull is a cycle: the same from any point
        order = [int(i) for i in order]
        start = order.index(min(order)) if order else 0
        return order[start:] + order[:start]

    test = make_split(model.config.data, "test")  # drawn by the config's seed, solved exactly
    solved = [model.solve(points, beam=1).order for points in test.inputs]
    exact = sum(from_lowest(s) == from_lowest(g) for s, g in zip(solved, test.solutions))
    return "exact_match", len(test), 100 * exact / len(test)


#: a zoo model's family -> (its metric, test items, score) as the test measures them
SCORES = {
    "seq2seq": _seq2seq_score,
    "vision": _vision_score,
    "graph": _graph_score,
    "text": _text_score,
    "memnet": _memnet_score,
    "pointer": _pointer_score,
}
#: what a good model reaches where the zoo's short recipes cannot reach 90% (the models' configs)
GOOD = {
    "configs/sst2_bilstm_attention.yaml": 80,  # the full recipe: 86%
    "configs/cora_gat.yaml": 80,  # the paper: 83%
    "configs/cora_gatv2.yaml": 80,
    "configs/pointer_hull10.yaml": 40,  # exact hulls, 4 short epochs (width 128, 6 min: 62%)
    "configs/babi_memn2n.yaml": 5,  # error % (lower is better): a task passed is under 5%
    "configs/g2p_cmudict.yaml": 40,  # test WER % of a 0.75M model (the 14.2M ensemble: 21.38%)
    "configs/multi30k_de_en_transformer.yaml": 30,  # greedy test BLEU (a 40M RNN: 38.76)
}
#: the metrics where lower is better (an error rate)
LOWER_IS_BETTER = ("mean_error_pct", "wer")


@pytest.mark.parametrize("name", NAMES)
def test_each_zoo_model_loads_and_scores_what_its_row_says(name, shared_data):
    row = zoo.index()[name]["test"]
    model = attnkit.load(f"zoo:{name}", device="cpu")
    metric, items, value = SCORES[model.family](model, shared_data)
    assert metric == row["metric"]
    assert items == row["items"]
    assert value == pytest.approx(row["value"], abs=0.01)
    good = GOOD.get(zoo.index()[name]["config"], 90)  # every zoo model is a good one
    lower_is_better = metric in LOWER_IS_BETTER
    assert row["value"] <= good if lower_is_better else row["value"] >= good


@pytest.mark.parametrize("name", NAMES)
def test_each_zoo_model_is_stored_as_float16_and_scores_as_its_float32_source(name):
    from attnkit.checkpoint.half import stored_as_half
    from attnkit.checkpoint.shards import read_weights, weight_files

    assert all(stored_as_half(f) for f in weight_files(zoo.MODELS / name))
    stored = read_weights(zoo.MODELS / name)
    assert {str(t.dtype) for t in stored.values()} <= {"torch.float16"} | {
        "torch.int64",
        "torch.bool",  # a mask buffer, not a weight
    }
    model = attnkit.load(f"zoo:{name}", device="cpu")
    net = model.translator.model if model.family == "seq2seq" else model.net
    assert {p.dtype for p in net.parameters()} == {torch.float32}  # upcast on load
    row = zoo.index()[name]["test"]
    assert row["value"] == pytest.approx(row["float32_value"], abs=HALF_TOLERANCE)


def test_an_unknown_zoo_name_is_one_line_naming_the_zoo(capsys):
    with pytest.raises(
        CheckpointError, match=f"zoo:nope: no such model in the zoo; it has {NAMES[0]}"
    ):
        attnkit.load("zoo:nope")
    with pytest.raises(SystemExit) as exit_:
        main(["translate", "--model", "zoo:nope", "elf"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "zoo:nope: no such model in the zoo" in err and "Traceback" not in err


def test_model_zoo_name_works_where_a_checkpoint_is_accepted(capsys):
    assert main(["translate", "--model", "zoo:numbers-bahdanau", "siebenundneunzig"]) == 0
    assert capsys.readouterr().out.strip() == "97"
    for argv in (["evaluate"], ["plot", "elf", "-o", "x.png"], ["explain", "elf"]):
        args = build_parser().parse_args([argv[0], "--model", "zoo:numbers-bahdanau", *argv[1:]])
        found = args.model[0] if isinstance(args.model, list) else args.model
        assert found == zoo.MODELS / "numbers-bahdanau"


def test_attnkit_zoo_lists_every_model_with_its_score(capsys):
    assert main(["zoo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name in NAMES:
        row = zoo.index()[name]["test"]
        line = next(line for line in lines if line.startswith(f"zoo:{name} "))
        assert f"{row['metric']} {row['value']:.2f}" in line
        # a translation or pointer model's score is of greedy decoding; others', of the test set
        family = json.loads((zoo.MODELS / name / "meta.json").read_text())["family"]
        assert ("(greedy" if family in ("seq2seq", "pointer") else "(test set") in line
        if "per" in row:  # a G2P model: its phone error rate beside its word error rate
            assert f", per {row['per']:.2f}%" in line
        if "failed_tasks" in row:  # a memory network: the bAbI tasks over 5% error
            assert f", {row['failed_tasks']} failed;" in line


def test_serve_without_a_model_serves_two_zoo_models_side_by_side_and_the_others():
    from attnkit.serve.options import settings_from_args

    settings = settings_from_args(build_parser().parse_args(["serve"]))
    assert settings.models == [zoo.MODELS / name for name in zoo.served()]
    assert settings.page == f"?second={zoo.SIDE_BY_SIDE[1]}"
    given = settings_from_args(build_parser().parse_args(["serve", "--model", "runs/x"]))
    assert given.page == "" and [str(m) for m in given.models] == ["runs/x"]


def test_checkpoint_argument_leaves_paths_alone():
    assert str(zoo.checkpoint_argument("runs/demo/model/best")) == "runs/demo/model/best"
    with pytest.raises(argparse.ArgumentTypeError):
        zoo.checkpoint_argument("zoo:")


def test_outputs_beside_a_zoo_model_go_to_runs_zoo_not_into_the_package():
    from pathlib import Path

    from attnkit.evaluation.summary import default_eval_dir

    model = zoo.resolve("zoo:numbers-bahdanau")
    assert default_eval_dir([model], "test") == Path("runs/zoo/eval/numbers-bahdanau-test")
    assert default_eval_dir([Path("runs/x/best")], "test") == Path("runs/x/eval/best-test")
    assert zoo.run_parent(Path("runs/x/best")) == Path("runs/x")


def test_the_explorer_opens_the_zoos_ram_and_reader(shared_data):
    """``attnkit serve --model zoo:mnist-ram --model zoo:strips-reader``: the glimpse stepper's
    steps (one glimpse each) and the reader's overlay (a digit and a map over the strip each)."""
    from fastapi.testclient import TestClient

    from attnkit.serve.app import ServeSettings, create_app

    shared_data("mnist")  # skips, saying so, without $ATTNKIT_DATA_DIR/mnist
    ram, reader = (zoo.resolve(f"zoo:{name}") for name in ("mnist-ram", "strips-reader"))
    app = create_app(ServeSettings(models=[ram, reader], max_wait_ms=1.0))
    with TestClient(app) as client:
        listed = {m["name"]: m for m in client.get("/v1/models").json()["models"]}
        assert {listed[n]["family"] for n in ("mnist-ram", "strips-reader")} == {"vision"}
        glimpses = client.post("/v1/classify", json={"model": "mnist-ram", "index": 0}).json()
        assert len(glimpses["steps"]) == 6 and all(s["glimpse"] for s in glimpses["steps"])
        assert glimpses["prediction"] in "0123456789"
        read = client.post("/v1/classify", json={"model": "strips-reader", "index": 0}).json()
        tokens = [s["token"] for s in read["steps"]]
        assert read["prediction"] and all(s["attention"] for s in read["steps"])
        digits = "".join(t for t in tokens if t and t.isdigit())
        assert digits and read["prediction"].startswith(digits)  # the digits read, step by step
        assert np.asarray(read["image"]).shape == (
            32,
            76,
        )  # three digits 22 pixels apart, jitter on both sides
