"""An image model's attention over its picture (families/hf/pictures.py): a tiny ViT (16 x 16
pixels, 4 x 4 patches of 4 pixels and [CLS]; random weights, built here) classifies a picture;
the result keeps the picture as the model read it and its patches' grid, the [CLS] row of a map
reshaped over the patches, ``show()`` adds the picture with each layer's and the rollout's row
over it, and ``attnkit plot --image`` draws the picture beside the map."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("transformers", reason="no transformers (pip install attnkit[hf])")
import attnkit  # noqa: E402
from attnkit.cli import main  # noqa: E402
from attnkit.errors import AttnkitError  # noqa: E402
from attnkit.families.hf.pictures import patch_grid, plot_patches  # noqa: E402
from attnkit.families.hf.tiny import save_tiny  # noqa: E402


@pytest.fixture(scope="module")
def vit(tmp_path_factory):
    return f"hf:{save_tiny('vit', tmp_path_factory.mktemp('vit') / 'vit')}"


@pytest.fixture(scope="module")
def image():
    return np.random.default_rng(0).integers(0, 256, (20, 24, 3)).astype(np.uint8)


def test_the_result_keeps_the_picture_and_its_patches(vit, image):
    result = attnkit.load(vit).classify(image)
    assert result.picture.shape == (16, 16, 3) and result.picture.dtype == np.uint8
    assert result.patches == (4, 4, 1)
    heads = result.parts["self"].heads  # (2, 4, 17, 17)
    grid = patch_grid(heads[1, 2], result.patches)
    assert grid.shape == (4, 4)
    assert grid[0, 0] == heads[1, 2, 0, 1] and grid[3, 3] == heads[1, 2, 0, 16]
    assert grid[1, 0] == heads[1, 2, 0, 5]  # row by row: r1c0 is the fifth patch


def test_show_adds_each_layers_and_the_rollouts_row_over_the_picture(vit, image):
    result = attnkit.load(vit).classify(image)
    page = result.html()
    found = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', page, re.S)
    views = [json.loads(text) for text in found]
    assert [v["kind"] for v in views] == ["seq2seq", "vision"]
    steps = views[1]["steps"]
    assert [s["token"] for s in steps] == ["layer 1", "layer 2", "rollout"]
    heads = result.parts["self"].heads
    for layer, step in enumerate(steps[:2]):
        want = heads[layer].mean(0)[0, 1:].reshape(4, 4)
        np.testing.assert_allclose(step["attention"], want, atol=1e-5)
    np.testing.assert_allclose(
        steps[2]["attention"], result.rollout()[0, 1:].reshape(4, 4), atol=1e-5
    )
    assert np.array(views[1]["image"]).shape == (16, 16)
    assert views[1]["prediction"] == result.label


def test_a_text_result_has_no_picture(tmp_path):
    bert = attnkit.load(f"hf:{save_tiny('bert', tmp_path / 'bert')}").classify("the cat sat")
    assert bert.picture is None and bert.patches is None
    assert '"kind": "vision"' not in bert.html()
    with pytest.raises(AttnkitError, match="not of an image model's patches"):
        plot_patches(bert, tmp_path / "no.png")


def test_plot_draws_the_picture_beside_the_map(vit, image, tmp_path):
    result = attnkit.load(vit).classify(image)
    figure = plot_patches(result, tmp_path / "mean.png")
    assert len(figure.axes) == 3  # the picture, the map and its colour bar
    assert (tmp_path / "mean.png").read_bytes().startswith(b"\x89PNG")
    figure = plot_patches(result, tmp_path / "one.png", layer=2, head=3)
    assert "layer 2, head 3" in figure.axes[1].get_title()
    assert "rollout" in plot_patches(result, tmp_path / "r.png", rollout=True).axes[1].get_title()
    with pytest.raises(AttnkitError, match="layers 1 to 2"):
        plot_patches(result, tmp_path / "bad.png", layer=3)


def test_the_plot_command_draws_an_image_models_picture(vit, image, tmp_path, capsys):
    from PIL import Image

    Image.fromarray(image).save(tmp_path / "in.png")
    out = tmp_path / "out.png"
    base = ["plot", "--model", vit, "--image", str(tmp_path / "in.png"), "-o", str(out)]
    for extra in ([], ["--map", "rollout"]):  # plot_patches draws one layer and head above
        assert main([*base, *extra]) == 0
        assert out.read_bytes().startswith(b"\x89PNG")
        out.unlink()
    assert "an image of 24x20 -> " in capsys.readouterr().out
    assert main([*base, "--map", "rollout", "--layer", "1"]) != 0
    assert "leave out --layer/--head" in capsys.readouterr().err
