"""Soft spatial attention, the three visual models on synthetic images, and the pictures."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from attnkit.attention.spatial import (
    AttentionPooling,
    SpatialAttention,
    flatten_regions,
    regions_to_grid,
)
from attnkit.data.tasks.vision import StripLayout, strips, translated
from attnkit.models import show_attend_tell as sat
from attnkit.models.attention_pooling import AttentionPoolingClassifier
from attnkit.models.ram import RecurrentAttentionModel, hybrid_loss
from attnkit.viz import visual

# The learning tests run on several seeds; each bound holds with a margin on every seed of
# benchmarks/learning_margins.py's sweep, with torch's AVX-512 and AVX2 kernels alike
# (ATEN_CPU_CAPABILITY=avx2), whose float rounding sends training down different paths.
LEARNING_SEEDS = (0, 1, 2)
READER_RATIO = 0.5  # final loss / first loss
RAM_RATIO = 0.6  # mean of the last 5 classification losses / mean of the first 5
POOLING_STEPS = 40  # at 25 steps the ratio reached 0.62 on one seed
POOLING_RATIO = 0.6


def synthetic_digits() -> tuple[np.ndarray, np.ndarray]:
    """Ten easy 'digits': digit k is a bar pattern unique to k."""
    images = np.zeros((10, 28, 28), dtype=np.uint8)
    for k in range(10):
        images[k, 4:24, 6 + 2 * (k % 5) : 10 + 2 * (k % 5)] = 255
        if k >= 5:
            images[k, 10:14, 4:24] = 255
    return images, np.arange(10)


# ---------------------------------------------------------------- attention over regions


def test_flatten_and_grid_round_trip():
    fmap = torch.randn(2, 5, 3, 4)
    regions = flatten_regions(fmap)  # (B, R, C)
    assert regions.shape == (2, 12, 5)
    torch.testing.assert_close(regions[:, 1 * 4 + 2], fmap[:, :, 1, 2])
    torch.testing.assert_close(regions_to_grid(regions[..., 0], 3, 4), fmap[:, 0])


def test_spatial_attention_weights_sum_to_one_and_masked_regions_get_zero():
    torch.manual_seed(0)
    attn = SpatialAttention(query_dim=6, feature_dim=5, attn_dim=7)
    regions, query = torch.randn(3, 10, 5), torch.randn(3, 6)
    context, weights = attn(query, regions)
    assert context.shape == (3, 5) and weights.shape == (3, 10)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3))
    torch.testing.assert_close(context, torch.einsum("br,brc->bc", weights, regions))
    mask = torch.ones(3, 10, dtype=torch.bool)
    mask[0, 4:] = False
    mask[2] = False  # a fully masked row: all-zero weights, not NaN
    context, weights = attn(query, regions, mask=mask)
    assert torch.all(weights[0, 4:] == 0) and torch.all(weights[2] == 0)
    torch.testing.assert_close(weights[:2].sum(-1), torch.ones(2))
    assert torch.isfinite(context).all()
    # projecting the regions once gives the same answer
    projected = attn.project_keys(regions)
    torch.testing.assert_close(attn(query, regions, projected, mask)[1], weights)


@pytest.mark.parametrize("hidden", [None, 8])
def test_attention_pooling_is_a_weighted_average_of_cells(hidden):
    torch.manual_seed(0)
    pool = AttentionPooling(channels=4, hidden=hidden)
    fmap = torch.randn(2, 4, 3, 5)
    context, weights = pool(fmap)
    assert weights.shape == (2, 15) and context.shape == (2, 4)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2))
    torch.testing.assert_close(context, torch.einsum("br,brc->bc", weights, flatten_regions(fmap)))
    mask = torch.zeros(2, 15, dtype=torch.bool)
    mask[:, :3] = True
    _, weights = pool(fmap, mask)
    assert torch.all(weights[:, 3:] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2))


# ---------------------------------------------------------------- the multi-digit reader


def small_reader() -> sat.ShowAttendTell:
    return sat.ShowAttendTell(
        channels=[8, 16, 16], embed=8, hidden=32, attention_dim=16, gate=True, dropout=0.0
    )


def test_encode_decode_strings():
    inputs, targets = sat.encode_strings(["407", "9", ""], max_len=3)
    assert inputs.tolist()[0] == [sat.BOS, 4, 0, 7] and targets.tolist()[0] == [4, 0, 7, sat.EOS]
    assert targets.tolist()[1] == [9, sat.EOS, sat.PAD, sat.PAD]
    assert targets.tolist()[2] == [sat.EOS, sat.PAD, sat.PAD, sat.PAD]
    assert sat.decode_tokens(targets) == ["407", "9", ""]
    with pytest.raises(ValueError):
        sat.encode_strings(["1234"], max_len=3)


def test_reader_attention_sums_to_one_over_regions():
    torch.manual_seed(0)
    model = small_reader().eval()
    images = torch.rand(2, 1, 32, 120)
    inputs, _ = sat.encode_strings(["12", "345"], max_len=3)
    out = model(images, inputs)
    h, w = out.grid
    assert (h, w) == (4, 15)
    assert out.logits.shape == (2, 4, sat.VOCAB_SIZE) and out.weights.shape == (2, 4, h * w)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(2, 4))


def test_greedy_decoding_equals_the_teacher_forced_pass():
    torch.manual_seed(0)
    model = small_reader().eval()
    images = torch.rand(3, 1, 32, 120)
    tokens, weights, grid = model.greedy(images, max_len=6)
    inputs = torch.cat([torch.full((3, 1), sat.BOS), tokens[:, :-1]], dim=1)
    out = model(images, inputs)
    assert torch.equal(out.logits.argmax(-1), tokens)
    torch.testing.assert_close(out.weights, weights)


def reader_losses(seed: int, steps: int = 40) -> list[float]:
    """Training losses of a small digit-string reader on 16 strips, Adam at 1e-2."""
    torch.manual_seed(seed)
    digits, labels = synthetic_digits()
    canvas, strings = strips(digits, labels, count=16, layout=StripLayout(1, 3, 22, 1), seed=seed)
    images = torch.from_numpy(canvas).float().div(255).unsqueeze(1)
    inputs, targets = sat.encode_strings(strings, max_len=3)
    model = small_reader()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss, _ = sat.reader_loss(model(images, inputs), targets, doubly_stochastic=0.01)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("seed", LEARNING_SEEDS)
def test_reader_learns_a_handful_of_strips(seed):
    losses = reader_losses(seed)
    assert losses[-1] < READER_RATIO * losses[0]


def test_doubly_stochastic_term_counts_real_steps_only():
    weights = torch.full((1, 3, 4), 0.25)  # T=3 steps, R=4 regions
    out = sat.ReaderOutput(torch.zeros(1, 3, sat.VOCAB_SIZE), weights, (2, 2))
    targets = torch.tensor([[1, sat.EOS, sat.PAD]])  # two real steps
    total, ce = sat.reader_loss(out, targets, doubly_stochastic=1.0)
    assert (total - ce).item() == pytest.approx(4 * (1 - 0.5) ** 2)


# ---------------------------------------------------------------- RAM and attention pooling


def test_ram_shapes_and_locations_in_range():
    torch.manual_seed(0)
    model = RecurrentAttentionModel(
        glimpses=4, patch=6, scales=3, hidden=32, glimpse_hidden=16, location_hidden=8, core="lstm"
    )
    out = model(torch.rand(5, 1, 60, 60))
    assert out.log_probs.shape == (5, 10)
    assert out.locations.shape == out.means.shape == (5, 4, 2)
    assert out.location_log_probs.shape == out.baselines.shape == (5, 4)
    assert out.locations.abs().max() <= 1


def ram_losses(seed: int, steps: int = 80) -> list[float]:
    """Classification losses of a small RAM on ten random 7x7-cell patterns
    (hybrid loss, Adam 3e-3)."""
    torch.manual_seed(seed)
    cells = (
        np.random.default_rng(seed).random((10, 7, 7)) > 0.5
    )  # ten random 7x7 patterns, 4x4 px per cell
    digits = (cells.repeat(4, axis=1).repeat(4, axis=2) * 255).astype(np.uint8)
    images = (
        torch.from_numpy(digits).float().div(255).unsqueeze(1).repeat(3, 1, 1, 1)
    )  # (30, 1, 28, 28)
    targets = torch.arange(10).repeat(3)
    model = RecurrentAttentionModel(
        glimpses=3, patch=8, scales=2, hidden=64, glimpse_hidden=32, location_hidden=16
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        loss = hybrid_loss(model(images), targets)
        optimizer.zero_grad()
        loss.total.backward()
        optimizer.step()
        losses.append(loss.classification.item())
    return losses


@pytest.mark.parametrize("seed", LEARNING_SEEDS)
def test_ram_learns_a_few_images(seed):
    losses = ram_losses(seed)
    assert np.mean(losses[-5:]) < RAM_RATIO * np.mean(losses[:5])


def pooling_losses(seed: int, steps: int = POOLING_STEPS) -> list[float]:
    """Training losses of a small attention-pooling classifier on 40 translated digits
    (Adam 1e-2)."""
    torch.manual_seed(seed)
    digits, labels = synthetic_digits()
    canvas, y = translated(np.repeat(digits, 4, axis=0), np.repeat(labels, 4), size=40, seed=seed)
    images, targets = torch.from_numpy(canvas).float().div(255).unsqueeze(1), torch.from_numpy(y)
    model = AttentionPoolingClassifier(channels=[8, 16], attention_hidden=8, dropout=0.0)
    out = model(images)
    assert out.grid == (10, 10) and out.weights.shape == (40, 100)
    torch.testing.assert_close(out.weights.sum(-1), torch.ones(40))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.nll_loss(model(images).log_probs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("seed", LEARNING_SEEDS)
def test_attention_pooling_classifier_learns_translated_digits(seed):
    losses = pooling_losses(seed)
    assert losses[-1] < POOLING_RATIO * losses[0]


# ---------------------------------------------------------------- pictures


def check_png(path):
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def check_gif(path, frames):
    assert path.read_bytes()[:6] in (b"GIF89a", b"GIF87a")
    with Image.open(path) as gif:
        assert gif.n_frames == frames


def test_attention_pictures_are_written(tmp_path):
    image = np.zeros((32, 120), dtype=np.uint8)
    image[4:28, 10:30] = 255
    maps = np.random.default_rng(0).random((3, 4, 15))
    fig = visual.attention_grid(
        image, maps, ["1", "2", "<eos>"], path=tmp_path / "a.png", suptitle="pred 12"
    )
    assert len([ax for ax in fig.axes if ax.images]) == 4  # the image + one overlay per step
    check_png(tmp_path / "a.png")
    gif = visual.attention_gif(image, maps, None, tmp_path / "a.gif")
    check_gif(gif, 4)
    assert visual.upsample_map(maps[0], 32, 120).shape == (32, 120)


def test_glimpse_pictures_are_written(tmp_path):
    image = np.random.default_rng(0).random((60, 60))
    centres = np.array([[30, 30], [10, 50], [55, 5]], dtype=float)
    boxes = np.array(
        [[[c[0] - 6, c[1] - 6, 12], [c[0] - 12, c[1] - 12, 24]] for c in centres]
    )  # (G, k, 3)
    visual.glimpse_grid(image, centres, boxes, path=tmp_path / "g.png")
    check_png(tmp_path / "g.png")
    check_gif(visual.glimpse_gif(image, centres, boxes, None, tmp_path / "g.gif"), 3)
    with pytest.raises(ValueError):
        visual.glimpse_grid(image, centres, boxes[:2])
