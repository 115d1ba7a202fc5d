"""The Python API (``attnkit.load``, ``train``, ``configs`` and the result objects): it gives what
the command line gives for the same checkpoint, its results render offline, and bad calls get
one-line errors."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from test_heads import TINY_TRANSFORMER
from test_serve_app import numbers_model  # noqa: F401  (trained once per test run)
from test_vision_evaluation import MODELS, N_TEST, _checkpoint, digits  # noqa: F401 (a fixture)

import attnkit
from attnkit.cli import main
from attnkit.errors import AttnkitError, CheckpointError, ConfigError, InputError

REPO = Path(__file__).resolve().parents[2]


def _experiment(name: str, model: dict) -> dict:
    return {
        "name": name,
        "data": {"task": "numbers", "languages": ["de"], "max_number": 99},
        "model": model,
        "train": {"epochs": 2, "batch_size": 16},
    }


@pytest.fixture(scope="module")
def transformer_run(tmp_path_factory):
    """A two-layer, two-head Transformer trained for two epochs through ``attnkit.train``."""
    out = tmp_path_factory.mktemp("api") / "transformer"
    return attnkit.train(_experiment("api-transformer", TINY_TRANSFORMER), output_dir=out)


def _embedded(html: str) -> dict:
    """The JSON data of an inline view."""
    found = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


def _offline(html: str) -> None:
    """Nothing in the fragment is fetched from elsewhere."""
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<link" not in html and "import(" not in html


# ---- load --------------------------------------------------------------------------------------
def test_load_gives_the_model_of_each_family(numbers_model, tmp_path, digits):  # noqa: F811
    model = attnkit.load(numbers_model)
    assert isinstance(model, attnkit.Seq2SeqModel) and model.has_attention
    assert model.path == numbers_model
    vision = attnkit.load(_checkpoint(tmp_path, digits, "ram"))
    assert isinstance(vision, attnkit.VisionModel) and vision.config.model_type == "ram"
    both = attnkit.load([numbers_model, numbers_model])  # an ensemble of two
    assert len(both.translator.model.members) == 2


def test_load_refuses_what_is_not_a_checkpoint_in_one_line(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint directory"):
        attnkit.load(tmp_path / "missing")
    (tmp_path / "meta.json").write_text('{"format": "other"}')
    with pytest.raises(CheckpointError, match="not an attnkit checkpoint") as caught:
        attnkit.load(tmp_path)
    assert "\n" not in str(caught.value)


def test_import_attnkit_loads_no_torch_until_an_api_name_is_used():
    import subprocess
    import sys

    code = (
        "import sys, attnkit; print('torch' in sys.modules); attnkit.load; "
        "print('torch' in sys.modules)"
    )
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert lines.split() == ["False", "True"]


# ---- translate ---------------------------------------------------------------------------------
def test_translate_gives_what_the_command_line_prints(numbers_model, capsys):  # noqa: F811
    model = attnkit.load(numbers_model)
    texts = ["dreiundzwanzig", "siebzehn", "vier"]
    for beam in (1, 3):
        results = model.translate(texts, beam=beam, n_best=beam, alpha=0.0)
        assert main(["translate", "--model", str(numbers_model), "--beam", str(beam), "--n-best",
                     str(beam), "--alpha", "0", "--scores", *texts]) == 0  # fmt: skip
        printed = capsys.readouterr().out.splitlines()
        assert printed == [
            "\t".join(f"{o.output}\t{o.score:.4f}" for o in t.nbest) for t in results
        ]
    (one,) = model.translate("dreiundzwanzig")  # a string is one input
    assert one.output == results[0].output


def test_a_translation_is_a_distribution_over_the_source_with_gold_links(numbers_model):  # noqa: F811
    (t,) = attnkit.load(numbers_model).translate("dreiundzwanzig")
    assert t.weights.shape == (len(t.output_tokens), len(t.source_tokens))
    np.testing.assert_allclose(t.weights.sum(axis=1), 1.0, atol=1e-5)
    if t.output == "23":  # the generator aligns right outputs only
        assert t.gold and all(0 <= j < len(t.output_tokens) for j, _ in t.gold)
    d = t.to_dict()
    assert json.loads(json.dumps(d)) == d  # plain JSON types
    assert d["output"] == t.output and d["nbest"][0]["output"] == t.output


def test_translation_html_embeds_the_map_and_the_renderer_and_fetches_nothing(numbers_model):  # noqa: F811
    (t,) = attnkit.load(numbers_model).translate("siebzehn")
    html = t._repr_html_()
    data = _embedded(html)
    assert data["kind"] == "seq2seq"
    assert data["record"]["source_tokens"] == t.source_tokens
    np.testing.assert_allclose(data["record"]["weights"], t.weights, atol=1e-5)
    assert "window.AttnkitHeatmap" in html and "data:image/png;base64," in html
    _offline(html)


def test_transformer_translations_keep_every_layer_and_head(transformer_run):
    model = transformer_run.load()
    (t,) = model.translate("dreiundzwanzig")
    steps, sources = t.weights.shape
    assert t.heads.shape == (steps, 2, 2, sources)
    np.testing.assert_allclose(t.heads.mean(axis=(1, 2)), t.weights, atol=1e-5)
    assert np.array(_embedded(t._repr_html_())["record"]["heads"]).shape == t.heads.shape
    fig = t.plot(layer=2, head=1)
    assert isinstance(fig, Figure)


def test_plot_draws_into_axes_or_a_file(numbers_model, tmp_path):  # noqa: F811
    (t,) = attnkit.load(numbers_model).translate("vier")
    fig = Figure()
    ax = fig.add_subplot()
    assert t.plot(ax) is fig and ax.images  # drawn into the caller's axes
    path = tmp_path / "map.png"
    t.plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_show_outside_a_notebook_writes_a_page(numbers_model):  # noqa: F811
    (t,) = attnkit.load(numbers_model).translate("vier")
    page = t.show()
    try:
        text = page.read_text(encoding="utf-8")
        assert text.startswith("<!doctype html>") and "AttnkitHeatmap" in text
    finally:
        page.unlink()


def test_translate_errors_are_one_line_naming_the_argument(numbers_model):  # noqa: F811
    model = attnkit.load(numbers_model)
    for kwargs, name, needle in (
        ({"beam": 0}, "beam", "beam must be at least 1"),
        ({"beam": 2, "n_best": 3}, "n_best", r"n_best must be between 1 and the beam size \(2\)"),
        ({"alpha": float("inf")}, "alpha", "alpha, the length penalty, must be finite"),
        ({"top_k": -1}, "top_k", "top_k must be at least 0"),
        ({"prefix": ["9", "Q"]}, "prefix[1]", "'Q' is not a token of the target vocabulary"),
    ):
        with pytest.raises(InputError, match=needle) as err:
            model.translate("vier", **kwargs)
        assert err.value.name == name and "\n" not in str(err.value)
    with pytest.raises(InputError, match="beam must be at least 1"):
        model.evaluate(beam=0)


# ---- explain and evaluate ----------------------------------------------------------------------
def test_explain_puts_saliency_beside_the_attention(numbers_model, tmp_path):  # noqa: F811
    model = attnkit.load(numbers_model)
    e = model.explain("dreiundzwanzig", method="input-x-gradient")
    assert e.method == "input_x_gradient"
    assert e.attention.shape == e.saliency.shape == (len(e.output_tokens), len(e.source_tokens))
    assert np.isfinite(e.saliency).all() and (e.saliency >= 0).all()
    assert 0.0 <= e.scores["argmax_agreement"] <= 1.0
    record = _embedded(e._repr_html_())["record"]
    np.testing.assert_allclose(record["saliency"], e.saliency, atol=1e-5)
    e.plot(tmp_path / "pair.png")
    assert (tmp_path / "pair.png").stat().st_size > 0
    with pytest.raises(AttnkitError, match="unknown saliency method"):
        model.explain("vier", method="lime")
    with pytest.raises(AttnkitError, match="non-blank"):
        model.explain("   ")


def test_evaluate_gives_the_scores_the_command_line_writes(numbers_model, tmp_path, capsys):  # noqa: F811
    model = attnkit.load(numbers_model)
    scores = model.evaluate(split="test", beam=2, out=tmp_path / "api")
    assert main(["evaluate", "--model", str(numbers_model), "--beam", "2", "--json",
                 "--out", str(tmp_path / "cli")]) == 0  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    timing = ("decode_s", "inputs_per_s")
    for run in ("greedy", "beam2"):
        mine = {k: v for k, v in scores[run].items() if k not in timing}
        assert mine == {k: v for k, v in printed[run].items() if k not in timing}
    assert scores.metric == "exact_match" and scores.value == scores["greedy"]["exact_match"]
    assert (scores.out / "report.html").is_file() and "exact_match" in str(scores)
    assert isinstance(scores.plot(), Figure)


# ---- vision ------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_type", list(MODELS))
def test_classify_answers_as_the_server_does(model_type, tmp_path, digits):  # noqa: F811
    model = attnkit.load(_checkpoint(tmp_path, digits, model_type))
    c = model.classify(3)
    assert c.label == "3" and c.image.shape == (28, 28)
    assert len(c.probs) == 10 and c.prediction == str(int(np.argmax(c.probs)))
    if model_type == "ram":
        assert len(c.glimpses) == 3 and not c.attention
    else:
        (att,) = c.attention
        assert att.sum() == pytest.approx(1.0, abs=1e-3)
    pixels = (c.image * 255).round().astype(np.uint8)
    assert model.classify(pixels).prediction == c.prediction  # the same image as an array
    assert model.classify(pixels / 255.0).prediction == c.prediction  # or as floats in 0..1
    data = _embedded(c._repr_html_())
    assert data["kind"] == "vision" and len(data["steps"]) == len(c.steps)
    _offline(c._repr_html_())
    path = tmp_path / "steps.png"
    c.plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_classify_refuses_a_wrong_image_in_one_line(tmp_path, digits):  # noqa: F811
    model = attnkit.load(_checkpoint(tmp_path, digits, "attention_pooling"))
    for image, needle in (
        (np.zeros((5, 5), np.uint8), r"shape \(5, 5\), the model reads \(28, 28\)"),
        (np.full((28, 28), 2.0), "floats must lie in 0..1"),
        (N_TEST + 5, "the test split has images 0.."),
    ):
        with pytest.raises(ConfigError, match=needle):
            model.classify(image)
    for blank in (np.zeros((28, 28), np.uint8), np.full((28, 28), 1.0)):  # nothing to read
        with pytest.raises(InputError, match=r"image: blank \(every pixel \d+\): nothing to read"):
            model.classify(blank)
    with pytest.raises(InputError, match="give a test-image index, an image file or an"):
        model.classify([1, 2])
    with pytest.raises(InputError, match="image: not an image Pillow can read") as refused:
        model.classify(b"GIF89a, or anything but a PNG or JPEG")  # an upload's bytes
    assert refused.value.name == "image"


def test_classify_reads_an_uploaded_file_as_plot_reads_it(tmp_path, digits):  # noqa: F811
    from PIL import Image

    model = attnkit.load(_checkpoint(tmp_path, digits, "attention_pooling"))
    stroke = np.zeros((56, 56), np.uint8)
    stroke[10:46, 26:30] = 255  # a "1", white on black, twice the model's size
    Image.fromarray(stroke).save(tmp_path / "one.png")
    from_file = model.classify(tmp_path / "one.png")
    from_bytes = model.classify((tmp_path / "one.png").read_bytes())
    assert np.array_equal(from_bytes.image, from_file.image) and from_file.image.max() > 0.5
    assert from_bytes.prediction == from_file.prediction


def test_vision_evaluate_returns_scores(tmp_path, digits):  # noqa: F811
    model = attnkit.load(_checkpoint(tmp_path, digits, "attention_pooling"))
    scores = model.evaluate(out=tmp_path / "eval")
    assert scores["images"] == N_TEST and scores.value == scores["accuracy"]
    assert (tmp_path / "eval" / "report.html").is_file() and "error" in scores.table()


# ---- train and configs -------------------------------------------------------------------------
def test_scores_show_their_table_in_a_monospace_font_in_a_notebook():
    from attnkit.evaluation.scores import Scores

    scores = Scores(
        {
            "model": "bahdanau",
            "task": "numbers",
            "split": "test",
            "metric": "exact_match",
            "greedy": {"exact_match": 97.5, "cer": 0.61, "examples": 400},
            "beam5": {"exact_match": 98.25, "cer": 0.4, "examples": 400},
        }
    )
    page = scores._repr_html_()
    style = re.search(r'<pre class="attnkit-scores" style="([^"]*)">', page).group(1)
    font = re.search(r"font-family:([^;]*)", style).group(1)
    assert font.split(",")[-1] == "monospace" and "white-space:pre" in style
    assert escape(scores.table()) in page and "beam5" in scores.table()


def test_train_returns_the_run_with_its_scores(transformer_run):
    assert transformer_run.best == transformer_run.directory / "best"
    assert (transformer_run.best / "model.safetensors").is_file()
    dev = [r for r in transformer_run.history if r["kind"] == "dev"]
    assert dev and transformer_run.metrics == dev[-1]["dev"]
    assert "exact_match" in transformer_run.metrics


def test_train_overrides_as_a_mapping_and_the_run_directory_rules(tmp_path):
    config = _experiment("api-override", {"attention": "luong-dot", "embedding_dim": 8,
                                          "encoder_hidden": 4, "decoder_hidden": 8})  # fmt: skip
    out = tmp_path / "run"
    run = attnkit.train(config, overrides={"train.epochs": 1, "data.max_number": 50},
                        output_dir=out)  # fmt: skip
    saved = json.loads(json.dumps(attnkit.load(run.best).config, default=lambda o: o.__dict__))
    assert saved["train"]["epochs"] == 1 and saved["data"]["max_number"] == 50
    with pytest.raises(AttnkitError, match="overwrite"):  # a fresh run never replaces one
        attnkit.train(config, output_dir=out)
    with pytest.raises(
        ConfigError, match="attnkit.train\\(config\\): train: unknown key .nonsense."
    ):
        attnkit.train(config, overrides={"train.nonsense": 1}, output_dir=tmp_path / "other")


def test_configs_lists_every_shipped_config():
    found = attnkit.configs()
    assert {c.path.name for c in found} == {p.name for p in (REPO / "configs").glob("*.yaml")}
    assert {c.family for c in found} >= {"seq2seq", "vision", "pointer", "graph", "text", "memnet"}
    const = next(c for c in found if c.name == "cora_const")
    assert const.task == "cora" and const.model == "const-gat"
    numbers = next(c for c in found if c.name == "numbers_bahdanau")
    assert numbers.task == "numbers" and numbers.model == "bahdanau" and numbers.about
    babi = next(c for c in found if c.name == "babi_memn2n_joint")
    assert babi.task == "all" and babi.model == "memn2n-adjacent"


def test_the_public_names_are_exported():
    assert sorted(attnkit.__all__) == sorted(attnkit.api.__all__)
    for name in attnkit.__all__:
        assert getattr(attnkit, name) is getattr(attnkit.api, name)
    with pytest.raises(AttributeError):
        attnkit.nonexistent  # noqa: B018
