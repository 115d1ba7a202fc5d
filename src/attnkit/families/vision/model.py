"""A vision checkpoint in Python: classify one image and see where the model looked; evaluate.

Used by ``attnkit plot``/``evaluate`` of vision checkpoints, by ``POST /v1/classify`` of
``attnkit serve`` and by notebooks::

    model = attnkit.load("runs/ram/best")
    c = model.classify(7)            # test image 7; or a PNG/JPEG path, or an (H, W) array
    c.prediction, c.glimpses
    c.show()                         # the image with each step's attention or glimpse
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

from attnkit.data.location import checkpoint_data
from attnkit.errors import ConfigError, InputError
from attnkit.evaluation.scores import Scores
from attnkit.families import arguments as check
from attnkit.families.vision.bundle import load_vision_model
from attnkit.families.vision.pictures import plot_input
from attnkit.families.vision.results import Classification
from attnkit.models import show_attend_tell as sat

READER_STEPS = 6  # the digit reader reads at most 5 digits and its end token


def _classifier(net: nn.Module, x: torch.Tensor) -> tuple[str, list[float]]:
    """Attention pooling (one map) and RAM (its glimpses, the policy's means: no sampling): the
    class and the class probabilities."""
    out = net(x) if not hasattr(net, "sensor") else net(x, sample=False)
    probs = out.log_probs[0].exp().cpu()
    return str(int(probs.argmax())), probs.tolist()


def _reader(net: nn.Module, x: torch.Tensor) -> tuple[str, None]:
    """Show, attend and tell: the digits read (no class probabilities)."""
    tokens, _, _ = net.greedy(x, READER_STEPS)
    return sat.decode_tokens(tokens.cpu())[0], None


#: model.type -> run the model on (1, 1, H, W) images: (prediction, probs or None)
ANSWERS: dict[str, Callable] = {
    "attention_pooling": _classifier,
    "show_attend_tell": _reader,
    "ram": _classifier,
}


class VisionModel:
    """A loaded vision checkpoint: ``config`` (the run's resolved config), ``kind`` (its model
    type's kind: build, steps, figures), ``net`` (the torch module, in eval mode)."""

    family = "vision"

    def __init__(self, config, kind, net: nn.Module, path: Path | None = None):
        self.config, self.kind, self.net, self.path = config, kind, net, path

    @classmethod
    def load(cls, directory: str | Path, device: str = "auto") -> VisionModel:
        cfg, kind, net = load_vision_model(directory, device)
        return cls(cfg, kind, net, Path(directory))

    def __repr__(self) -> str:
        return f"VisionModel({self.config.model_type}, task={self.config.data.task}, {self.path})"

    def _input(self, image) -> tuple[np.ndarray, object, str]:
        """``(H, W)`` uint8 pixels, the label (None for a user's picture) and a name for files,
        of test image N (an int), an image file (a path: PNG or JPEG, made into the model's
        input as ``attnkit plot --image FILE`` does; or its bytes, an upload), or an array
        (uint8 0..255, or floats in 0..1)."""
        if isinstance(image, np.ndarray):
            return _not_blank(_pixels(image, self.config.data.image_shape())), None, "array"
        if isinstance(image, bytes):
            return _not_blank(_upload(image, self.config.data.image_shape())), None, "upload"
        if isinstance(image, bool) or not isinstance(image, int | str | Path | np.integer):
            raise InputError(
                f"image: give a test-image index, an image file or an (H, W) array, not "
                f"{type(image).__name__}",
                "image",
            )
        if not isinstance(image, str | Path):
            image = check.integer(image, "image", 0)
        pixels, label, name = plot_input(self.config, image)
        return (pixels if label is not None else _not_blank(pixels)), label, name

    def classify(self, image) -> Classification:
        """The model's answer on one image: test image N (an int), an image file (a path: PNG
        or JPEG, made into the model's input as ``attnkit plot --image FILE`` does; or the
        file's bytes), or an ``(H, W)`` array (uint8 0..255, or floats in 0..1); and where it
        looked, step by step. An upload that is no such image is an InputError naming
        ``image``."""
        pixels, label, _ = self._input(image)
        device = next(self.net.parameters()).device
        x = torch.from_numpy(np.ascontiguousarray(pixels)).float().div(255.0)[None, None]
        with torch.no_grad():
            prediction, probs = ANSWERS[self.config.model_type](self.net, x.to(device))
        steps = self.kind.steps(self.net, pixels, label)  # what the page and report.html draw

        def figure():
            torch.manual_seed(0)  # RAM's pictured glimpses as plot draws them
            return self.kind.figure(self.net, pixels, label, self.config.model)

        shown = None if label is None else str(label)
        return Classification(prediction, probs, pixels / 255.0, steps, shown, figure)

    def draw(self, image, out: str | Path, explain: bool = False) -> list[Path]:
        """The pictures ``attnkit plot`` draws of one image (as :meth:`classify` takes it) to
        ``out``: a
        .png or .svg file (every step side by side), a .gif (one frame per step), or a directory
        that gets both. ``explain``: the attention beside the gradient saliency and Grad-CAM of
        the same answer (one .png or .svg). Returns the written paths."""
        from attnkit.viz import visual
        from attnkit.viz.visual import picture_paths

        pixels, label, name = self._input(image)
        stem = f"{self.config.model_type}-{name}"
        torch.manual_seed(0)  # RAM's pictured glimpses are the same every time
        if not explain:
            paths = picture_paths(out, stem)
            return self.kind.picture(self.net, pixels, label, paths, self.config.model)
        from attnkit.families.vision.explain import explain_image, side_by_side

        paths = picture_paths(out, f"{stem}-explained")
        paths = [p for p in paths if p.suffix.lower() in visual.FIGURE_SUFFIXES]
        if not paths:
            raise ConfigError(f"-o {out}: --explain draws one picture: name a .png or .svg file")
        figure = side_by_side(explain_image(self.config.model_type, self.net, pixels, label))
        return [visual.save_figure(figure, path) for path in paths]

    def faithfulness(
        self,
        images=None,
        *,
        count: int = 10,
        out: str | Path | None = None,
        permutations: int = 100,
        adversarial_steps: int = 100,
        ig_steps: int = 16,
        seed: int = 0,
    ):
        """The faithfulness tests of a soft-attention model (attention pooling, show-attend-tell)
        over its image regions, on ``images`` (test-image indices, image files or arrays; default
        the first ``count`` test images); see :meth:`Seq2SeqModel.faithfulness`. Writes
        scores.json and report.html to ``out`` (default ``RUN/faithfulness/CHECKPOINT``)."""
        from attnkit.evaluation.faithfulness import Options
        from attnkit.evaluation.faithfulness_vision import vision_faithfulness
        from attnkit.evaluation.scores import FaithfulnessScores

        options = Options(
            ig_steps=ig_steps,
            permutations=permutations,
            adversarial_steps=adversarial_steps,
            seed=seed,
        )
        if out is None and self.path is not None:
            out = self.path.parent / "faithfulness" / self.path.name
        scores = vision_faithfulness(
            self.net,
            self.config.model_type,
            lambda image: self._input(image)[0],
            None if images is None else list(images),
            count,
            None if out is None else Path(out),
            options,
            str(self.path or ""),
            family=self.family,
        )
        return FaithfulnessScores(scores)

    def evaluate(
        self,
        split: str = "test",
        mc_samples: int | None = None,
        out: str | Path | None = None,
        data_dir: str | Path | None = None,
    ) -> Scores:
        """Score the checkpoint on ``split`` ("test" or "dev") and write scores.json,
        predictions.tsv and report.html to ``out`` (default ``RUN/eval/CHECKPOINT-SPLIT``).
        MNIST is read from ``data_dir`` (default ``$ATTNKIT_DATA_DIR/mnist``, else the user
        cache; the checkpoint's own ``data.directory`` is not followed, nothing is fetched)."""
        from attnkit.families.vision.evaluate import evaluate_to_dir, summary

        check.choice(split, "split", ("test", "dev"))
        if mc_samples is not None:
            check.integer(mc_samples, "mc_samples", 1)
        if self.path is None:
            raise ConfigError("evaluate: this model was not loaded from a checkpoint directory")
        config = self.config
        if data_dir is not None:
            check.path(data_dir, "data_dir")
            config = copy.copy(config)
            config.data = checkpoint_data(config.data, data_dir)
        loaded = (config, self.kind, self.net)
        return Scores(evaluate_to_dir(self.path, split, mc_samples, "auto", out, loaded), summary)


def _upload(data: bytes, shape: tuple[int, int]) -> np.ndarray:
    """PNG or JPEG bytes as the model's ``(H, W)`` uint8 input (as ``attnkit plot --image FILE``
    makes a file), or an InputError naming ``image``."""
    from attnkit.data.image_file import image_from_bytes
    from attnkit.errors import DataError

    try:
        return image_from_bytes(data, shape, "image").pixels
    except DataError as exc:
        raise InputError(str(exc), "image") from None


def _not_blank(pixels: np.ndarray) -> np.ndarray:
    """A user's ``(H, W)`` pixels, or an InputError naming ``image`` when every pixel is the
    same: there is nothing to read, and a model would still answer (and draw its attention over
    the blank) as if there were."""
    if pixels.size and pixels.min() == pixels.max():
        raise InputError(
            f"image: blank (every pixel {int(pixels.flat[0])}): nothing to read; draw a digit "
            "first",
            "image",
        )
    return pixels


def _pixels(image: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """An array as the model's ``(H, W)`` uint8 input, or a ConfigError naming what is wrong."""
    array = np.asarray(image)
    if array.shape != tuple(shape):
        raise ConfigError(f"image: shape {array.shape}, the model reads {tuple(shape)} images")
    if array.dtype == np.uint8:
        return array
    if not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
        raise ConfigError("image: give uint8 pixels (0..255) or finite floats in 0..1")
    if array.min() < 0 or array.max() > 1:
        raise ConfigError("image: floats must lie in 0..1 (white strokes on black)")
    return np.round(array * 255).astype(np.uint8)
