"""Implicit attention of the vision models (:mod:`attnkit.families.vision.explain`): the saliency
and Grad-CAM maps of each model type, checked against finite differences and a Grad-CAM written
out by hand; ``attnkit plot --explain`` and the vision report's saliency pictures.

The models are tiny and untrained (the maps are whatever they are: the tests check what the maps
are made of, not whether they look at the digit)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image
from test_vision_evaluation import _checkpoint, digits  # noqa: F401  (a synthetic test split)

from attnkit.attention.hard import glimpse_boxes
from attnkit.checkpoint import write_checkpoint
from attnkit.cli import main
from attnkit.families.vision import explain as ev
from attnkit.models import show_attend_tell as sat
from attnkit.models.attention_pooling import AttentionPoolingClassifier
from attnkit.models.ram import RecurrentAttentionModel


def _reader():
    return sat.ShowAttendTell([2, 3], embed=4, hidden=6, attention_dim=4, dropout=0.5)


def _pooling():
    return AttentionPoolingClassifier([2, 3], attention_hidden=4, dropout=0.5)


def _ram():
    return RecurrentAttentionModel(3, 4, 2, 2, 1, 6, 6, 8)


TINY = {"show_attend_tell": _reader, "attention_pooling": _pooling, "ram": _ram}


def _model(kind: str, dtype=torch.float32):
    torch.manual_seed(0)
    return TINY[kind]().to(dtype).eval()


def _digit_image(height: int, width: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((height, width)) > 0.7).astype(np.uint8) * 255


@pytest.mark.parametrize("kind", list(TINY))
def test_each_row_has_an_image_sized_saliency_and_grad_cam_summing_to_one(kind):
    model = _model(kind)
    image = _digit_image(16, 32) if kind == "show_attend_tell" else _digit_image(16, 16)
    explained = ev.explain_image(kind, model, image, None)
    implicit, rows = explained.implicit, len(explained.rows)
    assert len(explained.attention) == rows >= 1
    maps = [implicit.saliency] + ([implicit.gradcam] if kind != "ram" else [])
    assert (implicit.gradcam is None) == (kind == "ram")  # RAM has no conv layer
    for m in maps:
        assert m.shape == (rows, *image.shape) and m.min() >= 0
        torch.testing.assert_close(m.sum(dim=(1, 2)), torch.ones(rows))
    if kind == "show_attend_tell":  # a row per token read, as the attention has
        tokens, weights, _ = model.greedy(ev._batch(model, image), rows)
        assert tokens.shape[1] == rows == weights.shape[1]
    else:
        with torch.no_grad():
            out = model(ev._batch(model, image), **({"sample": False} if kind == "ram" else {}))
        assert explained.rows == [f"class {int(out.log_probs.argmax())}"]


def _finite_difference(score, x: torch.Tensor, pixels, eps: float = 1e-6) -> np.ndarray:
    """Central differences of ``score(x)`` (a float) at each (row, col) of ``pixels``."""
    out = []
    for r, c in pixels:
        up, down = x.clone(), x.clone()
        up[0, 0, r, c] += eps
        down[0, 0, r, c] -= eps
        with torch.no_grad():
            out.append((score(up) - score(down)) / (2 * eps))
    return np.asarray(out)


def _reader_case(model, x):
    with torch.no_grad():
        tokens = model.greedy(x, 3)[0][0]
    step = len(tokens) - 1  # the last step: every earlier token is forced before it
    inputs = torch.cat([torch.tensor([sat.BOS]), tokens[:-1]])[None]

    def score(images):
        logits = model(images, inputs).logits  # (1, T, V)
        return float(torch.log_softmax(logits, -1)[0, step, tokens[step]])

    return ev.reader_maps(model, x, tokens).saliency[step], score


def _class_case(maps, forward):
    def case(model, x):
        with torch.no_grad():
            target = int(forward(model, x).argmax())
        score = lambda images: float(forward(model, images)[0, target])  # noqa: E731
        return maps(model, x, target).saliency[0], score

    return case


CASES = {
    "show_attend_tell": _reader_case,
    "attention_pooling": _class_case(ev.pooling_maps, lambda m, x: m(x).log_probs),
    "ram": _class_case(ev.ram_maps, lambda m, x: m(x, sample=False).log_probs),
}


@pytest.mark.parametrize("kind", list(TINY))
def test_saliency_is_the_finite_difference_gradient_at_a_few_pixels(kind):
    """Each pixel's share of the map is |d log p / d x| over the sum: the ratio of two pixels'
    saliencies is the ratio of their central differences (double precision, a smooth image)."""
    model = _model(kind, torch.float64)
    width = 32 if kind == "show_attend_tell" else 16
    x = torch.from_numpy(np.random.default_rng(1).random((1, 1, 16, width)))
    torch.set_default_dtype(torch.float64)  # RAM's first state is made in the default dtype
    try:
        saliency, score = CASES[kind](model, x)
        pixels = _pixels(saliency)
        reference = np.abs(_finite_difference(score, x, pixels))
    finally:
        torch.set_default_dtype(torch.float32)
    got = np.array([float(saliency[p]) for p in pixels])
    np.testing.assert_allclose(got / got[0], reference / reference[0], rtol=1e-4, atol=1e-7)


def _pixels(saliency: torch.Tensor) -> list[tuple]:
    """The most salient pixel, then four others whose saliency is not ~0 (RAM's: in a glimpse)."""
    top = np.unravel_index(int(saliency.argmax()), saliency.shape)
    lit = np.argwhere(saliency.numpy() > 1e-3 * float(saliency.max()))  # RAM: inside glimpses
    rng = np.random.default_rng(2)
    return [top, *map(tuple, lit[rng.choice(len(lit), 4, replace=False)])]


def test_input_x_gradient_is_the_saliency_times_the_pixel():
    model = _model("attention_pooling", torch.float64)
    x = torch.from_numpy(np.random.default_rng(3).random((1, 1, 16, 16)))
    gradient = ev.pooling_maps(model, x, 4).saliency[0]
    product = ev.pooling_maps(model, x, 4, method="input_x_gradient").saliency[0]
    expected = gradient * x[0, 0]
    torch.testing.assert_close(product, expected / expected.sum())


def test_grad_cam_is_the_gradient_weighted_feature_map_stretched_to_the_image():
    """Grad-CAM of the pooling classifier written out: relu(sum_c mean_hw(dy/dA_c) A_c) on the
    CNN's feature map (the attention's grid), bilinear to the image, normalised."""
    model = _model("attention_pooling", torch.float64)
    x = torch.from_numpy(np.random.default_rng(4).random((1, 1, 16, 16)))
    fmap = model.encoder(x).detach().requires_grad_()  # (1, C, h, w)
    context, _ = model.pool(fmap)
    log_probs = F.log_softmax(model.classifier(context), dim=-1)
    (grad,) = torch.autograd.grad(log_probs[0, 7], fmap)
    cam = F.relu((grad.mean(dim=(2, 3), keepdim=True) * fmap).sum(1, keepdim=True))
    cam = F.interpolate(cam, size=(16, 16), mode="bilinear", align_corners=False)[0, 0]
    got = ev.pooling_maps(model, x, 7).gradcam[0]
    torch.testing.assert_close(got, (cam / cam.sum()).detach())


def test_ram_saliency_is_zero_outside_the_glimpses_of_its_path():
    model = _model("ram")
    image = _digit_image(16, 16, seed=5)
    x = ev._batch(model, image)
    with torch.no_grad():
        out = model(x, sample=False)
    saliency = ev.ram_maps(model, x, int(out.log_probs.argmax())).saliency[0]
    read = torch.zeros(16, 16, dtype=torch.bool)
    for box in glimpse_boxes(out.locations[0], 16, 16, model.sensor.sizes).reshape(-1, 3):
        x0, y0, size = (int(v) for v in box)
        read[max(y0, 0) : y0 + size, max(x0, 0) : x0 + size] = True
    assert float(saliency[~read].abs().max()) == 0.0 and float(saliency[read].sum()) > 0.99


def test_the_model_mode_is_restored_and_a_bad_method_refused():
    model = _model("attention_pooling").train()
    x = ev._batch(model, _digit_image(16, 16))
    a = ev.pooling_maps(model, x, 1).saliency
    assert model.training
    torch.testing.assert_close(ev.pooling_maps(model, x, 1).saliency, a)  # no dropout inside
    with pytest.raises(ValueError, match="unknown saliency method 'smooth'; valid: gradient"):
        ev.pooling_maps(model, x, 1, method="smooth")


def test_the_pictures_have_a_row_per_step():
    explained = ev.explain_image(
        "show_attend_tell", _model("show_attend_tell"), _digit_image(16, 32)
    )
    steps = len(explained.rows)
    side = ev.side_by_side(explained)
    assert len([ax for ax in side.axes if ax.get_title()]) == 3 * steps  # attention, sal., CAM
    titles = [ax.get_title() for ax in ev.implicit_only(explained).axes if ax.get_title()]
    assert titles == [
        f"{row} {kind}" for kind in ("saliency", "Grad-CAM") for row in explained.rows
    ]


# ---------------------------------------------------------------- the command and the report


@pytest.mark.parametrize("kind", ["attention_pooling", "ram"])
def test_plot_explain_draws_the_attention_beside_the_saliency(tmp_path, digits, capsys, kind):  # noqa: F811
    checkpoint = _checkpoint(tmp_path, digits, kind)
    target = tmp_path / "pics" / "why.png"
    argv = ["plot", "--model", str(checkpoint), "--image", "3", "--explain"]
    assert main([*argv, "-o", str(target)]) == 0
    assert capsys.readouterr().out.split() == [str(target)]
    with Image.open(target) as picture:
        assert picture.format == "PNG"
    plain = tmp_path / "plain.png"
    assert main(["plot", "--model", str(checkpoint), "--image", "3", "-o", str(plain)]) == 0
    assert target.read_bytes() != plain.read_bytes()
    assert main([*argv, "-o", f"{tmp_path}/dir/"]) == 0
    assert [p.name for p in (tmp_path / "dir").iterdir()] == [f"{kind}-test3-explained.png"]


def test_plot_explain_refusals_are_one_line(tmp_path, digits, capsys):  # noqa: F811
    checkpoint = _checkpoint(tmp_path, digits, "attention_pooling")
    argv = ["plot", "--model", str(checkpoint), "--image", "3", "--explain", "-o"]
    assert main([*argv, str(tmp_path / "why.gif")]) == 2
    err = capsys.readouterr().err
    assert "--explain draws one picture: name a .png or .svg file" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "why.gif").exists()
    seq2seq = write_checkpoint(tmp_path / "s2s", "seq2seq", {"w": torch.zeros(1)}, {})
    assert main(["plot", "--model", str(seq2seq), "siebzehn", "--explain", "-o", "x.png"]) == 2
    err = capsys.readouterr().err
    assert "--explain is for vision models" in err and "attnkit explain --model" in err
    assert len(err.strip().splitlines()) == 1


def test_the_report_shows_each_examples_saliency_beside_its_attention(tmp_path, digits):  # noqa: F811
    checkpoint = _checkpoint(tmp_path, digits, "attention_pooling")
    assert main(["evaluate", "--model", str(checkpoint)]) == 0
    page = (checkpoint.parent / "eval" / "best-test" / "report.html").read_text()
    items = re.findall(r'<li class="img">image (\d+):(.*?)</li>', page, flags=re.S)
    assert len(items) > 0
    for index, item in items:
        pair = re.search(r'<div class="pair">(.*?)</div>', item, flags=re.S)
        assert pair, f"image {index}: no pair of pictures"
        alts = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,', pair.group(1))
        assert alts == [
            f"where the model looked on image {index}",
            f"implicit attention on image {index}",
        ]
