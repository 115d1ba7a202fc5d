"""``attnkit evaluate`` and ``attnkit plot`` on vision checkpoints: the same outputs as seq2seq
(scores.json, per-image answers, report.html with the errors' pictures first), ``-o`` a file
unless a directory is given, and ``--image`` a test index or an image file.

The checkpoints are untrained (their answers are whatever they are) and the digits a small
synthetic MNIST test set written here, so nothing needs the real data.
"""

from __future__ import annotations

import base64
import io
import json
import re
import struct

import numpy as np
import pytest
import torch
from PIL import Image

from attnkit.checkpoint import write_checkpoint
from attnkit.cli import main
from attnkit.families.vision.config import parse_config
from attnkit.families.vision.evaluate import evaluate_vision
from attnkit.families.vision.kinds import MODEL_TYPES

N_TEST = 12
MODELS = {
    "ram": {"type": "ram", "glimpses": 3, "hidden": 16, "glimpse_hidden": 8, "location_hidden": 8},
    "attention_pooling": {"type": "attention_pooling", "channels": [4, 8], "attention_hidden": 4},
}


def _write_idx(path, array: np.ndarray, magic: int) -> None:
    header = struct.pack(">I", magic) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def digits(tmp_path, monkeypatch):
    """A directory with a 12-image MNIST test split (random strokes, labels 0..9), found as
    ``$ATTNKIT_DATA_DIR/mnist``: a loaded checkpoint reads nothing else."""
    directory = tmp_path / "mnist"
    directory.mkdir()
    monkeypatch.setenv("ATTNKIT_DATA_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    images = (rng.random((N_TEST, 28, 28)) > 0.8).astype(np.uint8) * 255
    _write_idx(directory / "t10k-images-idx3-ubyte", images, 2051)
    _write_idx(directory / "t10k-labels-idx1-ubyte", np.arange(N_TEST) % 10, 2049)
    return directory


def _checkpoint(tmp_path, digits, model_type: str):
    """An untrained checkpoint of ``model_type`` in RUN/best. Its config names a folder without
    the digits, to be fetched: a loaded checkpoint follows neither, and reads ``digits``."""
    elsewhere = str(tmp_path / "elsewhere")
    config = {
        "family": "vision",
        "data": {
            "task": "mnist",
            "directory": elsewhere,
            "download": True,
            "verify": False,
            "dev_size": 10,
        },
        "model": MODELS[model_type],
    }
    cfg = parse_config(config)
    torch.manual_seed(0)
    model = MODEL_TYPES[model_type].build(cfg.model)
    best = tmp_path / "run" / "best"
    write_checkpoint(best, "vision", model.state_dict(), cfg.to_dict(), {})
    return best


@pytest.fixture(params=list(MODELS))
def checkpoint(request, tmp_path, digits):
    return _checkpoint(tmp_path, digits, request.param)


def test_evaluate_writes_scores_answers_and_a_report_with_the_errors_first(checkpoint, capsys):
    assert main(["evaluate", "--model", str(checkpoint)]) == 0
    printed = capsys.readouterr().out
    out = checkpoint.parent / "eval" / "best-test"  # beside the checkpoint, as for seq2seq
    scores = json.loads((out / "scores.json").read_text())
    assert scores == {
        "checkpoint": str(checkpoint),
        **evaluate_vision(checkpoint, device="cpu"),
        "errors": scores["errors"],
    }
    assert f"error {scores['error_pct']:.2f}%" in printed and str(out / "scores.json") in printed

    rows = (out / "predictions.tsv").read_text().splitlines()
    assert rows[0] == "image\tlabel\tanswer\tright" and len(rows) == N_TEST + 1
    table = [row.split("\t") for row in rows[1:]]
    assert [int(r[1]) for r in table] == [i % 10 for i in range(N_TEST)]
    assert all(r[3] == str(int(r[1] == r[2])) for r in table)
    wrong = [int(r[0]) for r in table if r[3] == "0"]
    assert scores["errors"] == len(wrong) > 0  # an untrained model errs
    assert scores["error_pct"] == pytest.approx(100 * len(wrong) / N_TEST)

    page = (out / "report.html").read_text()
    errors_at, right_at = page.index('id="errors"'), page.index('id="right"')
    shown = [int(i) for i in re.findall(r"<li class=\"img\">image (\d+):", page)]
    assert shown[: len(wrong)] == wrong and errors_at < right_at  # the errors, in order, first
    first_error = page[errors_at:right_at]
    pictures = re.findall(
        r'alt="where the model looked[^"]*" src="data:image/png;base64,([^"]+)"', first_error
    )
    assert len(pictures) == len(wrong)  # beside each, its saliency (test_vision_saliency.py)
    assert base64.b64decode(pictures[0])[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_out_and_decoding_options(tmp_path, digits, capsys):
    checkpoint = _checkpoint(tmp_path, digits, "attention_pooling")
    out = tmp_path / "elsewhere"
    assert main(["evaluate", "--model", str(checkpoint), "--out", str(out), "--split", "test"]) == 0
    assert (out / "scores.json").is_file() and (out / "report.html").is_file()
    assert not (checkpoint.parent / "eval").exists()
    capsys.readouterr()
    for argv, needle in (
        (["--beam", "3"], "--beam 3: a vision model answers each image in one pass"),
        (["--alpha", "0.5"], "--alpha 0.5: a length penalty is for seq2seq"),
    ):
        assert main(["evaluate", "--model", str(checkpoint), *argv]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name, frames", [("x.png", None), ("x.svg", None), ("x.gif", 1)])
def test_plot_o_is_the_file_it_names(tmp_path, digits, capsys, name, frames):
    checkpoint = _checkpoint(tmp_path, digits, "attention_pooling")
    target = tmp_path / "pics" / name
    assert main(["plot", "--model", str(checkpoint), "--image", "3", "-o", str(target)]) == 0
    assert target.is_file() and capsys.readouterr().out.split() == [str(target)]
    assert sorted(p.name for p in target.parent.iterdir()) == [name]  # that file, nothing else
    if name.endswith(".svg"):
        assert target.read_text().lstrip().startswith("<?xml") and "<svg" in target.read_text()
    else:
        with Image.open(target) as image:
            assert image.format == name[2:].upper()
            assert frames is None or image.n_frames >= 2  # the input, then the attention


def test_plot_o_directory_only_when_given_one(tmp_path, digits, capsys):
    checkpoint = _checkpoint(tmp_path, digits, "ram")
    new_dir = tmp_path / "new"
    assert main(["plot", "--model", str(checkpoint), "--image", "2", "-o", f"{new_dir}/"]) == 0
    assert sorted(p.name for p in new_dir.iterdir()) == ["ram-test2.gif", "ram-test2.png"]
    existing = tmp_path / "existing"
    existing.mkdir()
    assert main(["plot", "--model", str(checkpoint), "--image", "2", "-o", str(existing)]) == 0
    assert sorted(p.name for p in existing.iterdir()) == ["ram-test2.gif", "ram-test2.png"]
    capsys.readouterr()
    nameless = tmp_path / "pics"
    assert main(["plot", "--model", str(checkpoint), "--image", "2", "-o", str(nameless)]) == 2
    assert "name a .png, .svg or .gif file, or a directory" in capsys.readouterr().err
    assert not nameless.exists()
    assert main(["plot", "--model", str(checkpoint), "--image", "12", "-o", "x.png"]) == 2
    assert "the test split has images 0..11" in capsys.readouterr().err


def test_plot_image_file_is_converted_like_the_training_images(tmp_path, digits, capsys):
    """A black-on-white RGB PNG of another size: made grey, inverted and 28x28 before the model
    reads it (the same picture as the converted pixels drawn directly)."""
    checkpoint = _checkpoint(tmp_path, digits, "attention_pooling")
    drawing = np.full((90, 60, 3), 255, dtype=np.uint8)
    drawing[20:70, 25:35] = 0  # a dark "1" on paper
    user = tmp_path / "my digit.png"
    Image.fromarray(drawing).save(user)
    target = tmp_path / "seen.png"
    with pytest.warns(UserWarning, match="light background, inverted"):
        assert (
            main(["plot", "--model", str(checkpoint), "--image", str(user), "-o", str(target)]) == 0
        )
    assert capsys.readouterr().out.split() == [str(target)]
    with pytest.warns(UserWarning):
        assert (
            main(["plot", "--model", str(checkpoint), "--image", str(user), "-o", f"{tmp_path}/"])
            == 0
        )
    assert (tmp_path / "attention_pooling-my digit.png").is_file()

    from attnkit.data.image_file import read_image

    pixels = read_image(user, (28, 28)).pixels
    assert pixels.shape == (28, 28) and pixels.dtype == np.uint8
    assert pixels[:, :3].max() == 0 and pixels[14, 14] > 200  # black margins, white stroke


def _image_bytes(size, fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", size, 255).save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"not an image at all", "not an image Pillow can read"),
        (_image_bytes((40, 40), "PNG")[:60], "cannot decode the image"),
        (_image_bytes((4, 40), "PNG"), "4x40 pixels: each side must be 8 to 4096"),
        (_image_bytes((40, 40), "GIF"), "a GIF image: give a PNG or JPEG"),
    ],
    ids=["not-an-image", "truncated", "too-small", "gif"],
)
def test_plot_bad_image_file_is_one_line(tmp_path, digits, capsys, content, needle):
    checkpoint = _checkpoint(tmp_path, digits, "attention_pooling")
    bad = tmp_path / "bad.png"
    bad.write_bytes(content)
    out = tmp_path / "x.png"
    assert main(["plot", "--model", str(checkpoint), "--image", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: " in err and needle in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def _embedded_views(page: str) -> list[dict]:
    match = re.search(r'<script type="application/json" id="attnkit-vision">(.*?)</script>', page)
    assert match, "no embedded steps"
    return json.loads(match.group(1))


def test_the_report_embeds_each_examples_steps_for_the_shared_renderer(checkpoint):
    """Every pictured example also carries the image and its steps as data (one attention map
    over the regions for attention pooling, one glimpse per step for RAM), and the page inlines
    the explorer's heatmap renderer to draw them."""
    from attnkit.viz.report import heatmap_js

    assert main(["evaluate", "--model", str(checkpoint)]) == 0
    page = (checkpoint.parent / "eval" / "best-test" / "report.html").read_text()
    views = _embedded_views(page)
    holders = [int(k) for k in re.findall(r'<div class="steps" data-k="(\d+)">', page)]
    assert holders == list(range(len(views))) == list(range(page.count('<li class="img">')))
    assert heatmap_js() in page and page.count("</script>") == 2
    for view in views:
        image = np.asarray(view["image"])
        assert image.shape == (28, 28) and 0 <= image.min() and image.max() <= 1
        steps = view["steps"]
        kind = "glimpse" if steps[0]["glimpse"] is not None else "attention"
        if kind == "glimpse":
            assert len(steps) == MODELS["ram"]["glimpses"]
            assert all(-1 <= s["glimpse"][a] <= 1 for s in steps for a in ("x", "y"))
            assert all(s["attention"] is None and s["glimpse"]["size"] > 0 for s in steps)
        else:
            (step,) = steps
            weights = np.asarray(step["attention"])
            assert weights.ndim == 2 and weights.sum() == pytest.approx(1.0, abs=1e-3)


def test_ram_steps_put_the_glimpse_centres_where_the_picture_draws_them(tmp_path, digits):
    """The steps' centres (-1..1) are the glimpse path's pixel centres of the PNG's figure."""
    from attnkit.families.vision.bundle import load_vision_model

    _, family, model = load_vision_model(_checkpoint(tmp_path, digits, "ram"), "cpu")
    image = (np.random.default_rng(1).random((28, 28)) > 0.7).astype(np.uint8) * 255
    centres, boxes, _, _ = family.glimpse_path(model, image, None)
    steps = family.steps(model, image, None)
    back = [
        ((s["glimpse"]["x"] + 1) / 2 * 28 - 0.5, (s["glimpse"]["y"] + 1) / 2 * 28 - 0.5)
        for s in steps
    ]
    np.testing.assert_allclose(back, centres, atol=1e-3)
    assert [s["glimpse"]["size"] for s in steps] == boxes[:, 0, 2].tolist()
