"""Implicit attention of the vision models: where an answer depends on the image, by gradients.

Beside what a model says it looked at (its attention maps, or RAM's glimpse path), captum says
which pixels its answer depends on:

* **saliency**: ``|d log p(answer) / d x|`` at every pixel (``method="gradient"``, Simonyan et al.
  2014) or ``|x * d log p / d x|`` (``"input_x_gradient"``), kept at the image's resolution
  ``(H, W)`` (pooling it to the attention grid would blur the strokes it follows);
* **Grad-CAM** (Selvaraju et al. 2017): the CNN's feature map -- the output of its last conv block,
  the very ``(h, w)`` grid the attention reads -- weighted by the mean gradient of each channel,
  rectified, and stretched to ``(H, W)`` (bilinear, ``LayerAttribution.interpolate``).

What the answer is, per model type:

* the digit reader (show-attend-tell): one row per output step, the log-probability of the token
  the model chose there, with the decoder forced along its own greedy answer;
* the attention-pooling classifier: the predicted class;
* RAM: the predicted class with the glimpse path fixed to the policy's means (the path the
  pictures draw). The locations are detached actions, so the gradient flows through the pixels
  the glimpses read and is zero everywhere else; RAM has no conv layer, hence no Grad-CAM.

Every map is normalised to sum to 1 over the image (an attention map sums to 1 over its grid), a
map whose gradients all vanish stays 0. The model is explained as it is, in eval mode for the
call. Shapes: T rows (output steps), C channels, H x W the image, h x w the attention grid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from captum.attr import InputXGradient, LayerAttribution, LayerGradCam, Saliency
from torch import Tensor, nn

from attnkit.errors import ConfigError
from attnkit.families.vision.bundle import load_vision_model
from attnkit.families.vision.kinds import MODEL_TYPES
from attnkit.families.vision.pictures import plot_input
from attnkit.models import show_attend_tell as sat
from attnkit.viz import visual
from attnkit.viz.visual import Panel

METHODS = ("gradient", "input_x_gradient")


@dataclass
class ImplicitMaps:
    """The implicit attention of one image, a map per row, each summing to 1 (or all 0)."""

    saliency: Tensor  # (T, H, W)
    gradcam: Tensor | None  # (T, H, W); None for a model without a conv layer (RAM)


@dataclass
class Explanation:
    """One image explained: per row, the explicit attention beside the implicit one."""

    image: np.ndarray  # (H, W) uint8
    attention: list[Panel]  # per row: its attention map, or the glimpse path
    implicit: ImplicitMaps
    rows: list[str]  # what each row explains: "step 2: 7", "class 3"
    suptitle: str


# ---------------------------------------------------------------- the maps (captum)


def implicit_maps(
    forward: Callable[[Tensor], Tensor],
    x: Tensor,
    targets: list[int],
    layer: nn.Module | None = None,
    method: str = "gradient",
) -> ImplicitMaps:
    """Saliency (and Grad-CAM on ``layer``'s output, if given) of one image ``x`` (1, C, H, W)
    for each output column in ``targets``: ``forward`` maps images (T, C, H, W) to scores (T, K)
    and row t is explained for column ``targets[t]``.

    The image is repeated once per target so one backward pass gives every row (the rows of a
    batch do not meet in an eval-mode model)."""
    if method not in METHODS:
        raise ValueError(f"unknown saliency method {method!r}; valid: {', '.join(METHODS)}")
    rows = x.expand(len(targets), *x.shape[1:]).detach().clone().requires_grad_()  # (T, C, H, W)
    with torch.enable_grad():
        if method == "gradient":
            saliency = Saliency(forward).attribute(rows, target=targets, abs=True)
        else:
            saliency = InputXGradient(forward).attribute(rows, target=targets).abs()
        cam = None
        if layer is not None:
            cam = LayerGradCam(forward, layer).attribute(
                rows, target=targets, relu_attributions=True
            )  # (T, 1, h, w)
            cam = LayerAttribution.interpolate(cam, tuple(x.shape[-2:]), "bilinear")[:, 0]
    saliency = saliency.sum(dim=1)  # (T, H, W): over the channels
    return ImplicitMaps(_normalise(saliency), None if cam is None else _normalise(cam))


def _normalise(maps: Tensor) -> Tensor:
    """(T, H, W) -> each map divided by its sum; an all-zero map stays zero."""
    maps = maps.detach()
    return (maps / maps.sum(dim=(1, 2), keepdim=True).clamp_min(1e-30)).cpu()


def _in_eval(model: nn.Module, explain: Callable[[], ImplicitMaps]) -> ImplicitMaps:
    """``explain()`` with ``model`` in eval mode (no dropout, BatchNorm's running statistics)."""
    was_training = model.training
    model.eval()
    try:
        return explain()
    finally:
        model.train(was_training)


def reader_maps(
    model: sat.ShowAttendTell, x: Tensor, tokens: Tensor, method: str = "gradient"
) -> ImplicitMaps:
    """The reader's implicit attention at each step of ``tokens`` (T,), its answer on ``x``
    (1, 1, H, W): the log-probability of token t at step t, the decoder forced along ``tokens``."""
    tokens = tokens.to(x.device)
    inputs = torch.cat([tokens.new_tensor([sat.BOS]), tokens[:-1]])  # (T,)

    def forward(images: Tensor) -> Tensor:  # (T, 1, H, W) -> (T, T) log p(token t at step t')
        logits = model(images, inputs.expand(images.shape[0], -1)).logits  # (T, T, V)
        logp = torch.log_softmax(logits, dim=-1)
        return logp.gather(2, tokens.expand(images.shape[0], -1).unsqueeze(2)).squeeze(2)

    targets = list(range(len(tokens)))
    return _in_eval(model, lambda: implicit_maps(forward, x, targets, model.encoder, method))


def pooling_maps(model: nn.Module, x: Tensor, target: int, method: str = "gradient"):
    """The attention-pooling classifier's implicit attention for class ``target`` on ``x``."""
    forward = lambda images: model(images).log_probs  # noqa: E731  (T, 10)
    return _in_eval(model, lambda: implicit_maps(forward, x, [target], model.encoder, method))


def ram_maps(model: nn.Module, x: Tensor, target: int, method: str = "gradient"):
    """RAM's class saliency for ``target`` on ``x``, the glimpse path at the policy's means."""
    forward = lambda images: model(images, sample=False).log_probs  # noqa: E731  (T, 10)
    return _in_eval(model, lambda: implicit_maps(forward, x, [target], None, method))


# ---------------------------------------------------------------- one image, per model type


def _batch(model: nn.Module, image: np.ndarray) -> Tensor:
    """(H, W) uint8 -> (1, 1, H, W) in [0, 1], on the model's device and in its dtype."""
    p = next(model.parameters())
    pixels = torch.from_numpy(np.ascontiguousarray(image)).to(p.device, p.dtype)
    return (pixels / 255.0)[None, None]


def _explain_reader(model, image, label, method) -> Explanation:
    kind = MODEL_TYPES["show_attend_tell"]
    maps, titles, top = kind.maps(model, image, label)  # (T, h, w), "step t: token"
    x = _batch(model, image)
    tokens, _, _ = model.greedy(x, len(maps))  # the answer the maps belong to, (1, T)
    implicit = reader_maps(model, x, tokens[0], method)
    attention = [Panel(title, weights=m) for m, title in zip(maps, titles)]
    return Explanation(image, attention, implicit, titles, top)


def _explain_pooling(model, image, label, method) -> Explanation:
    kind = MODEL_TYPES["attention_pooling"]
    maps, _, top = kind.maps(model, image, label)  # (1, h, w)
    x = _batch(model, image)
    with torch.no_grad():
        predicted = int(model(x).log_probs.argmax())
    implicit = pooling_maps(model, x, predicted, method)
    row = f"class {predicted}"
    return Explanation(image, [Panel(f"attention ({row})", weights=maps[0])], implicit, [row], top)


def _explain_ram(model, image, label, method) -> Explanation:
    centres, boxes, _, top = MODEL_TYPES["ram"].glimpse_path(model, image, label)
    x = _batch(model, image)
    with torch.no_grad():
        predicted = int(model(x, sample=False).log_probs.argmax())
    implicit = ram_maps(model, x, predicted, method)
    row = f"class {predicted}"
    path = Panel(f"glimpse path ({row})", glimpse=(centres, boxes, len(centres) - 1))
    return Explanation(image, [path], implicit, [row], top)


#: model.type -> how one image of it is explained
EXPLAINERS: dict[str, Callable[..., Explanation]] = {
    "show_attend_tell": _explain_reader,
    "attention_pooling": _explain_pooling,
    "ram": _explain_ram,
}


def explain_image(
    model_type: str, model: nn.Module, image: np.ndarray, label=None, method: str = "gradient"
) -> Explanation:
    """The attention and the implicit attention of ``model`` on one (H, W) uint8 image (``label``
    None: the answer is unknown, as for a user's file)."""
    return EXPLAINERS[model_type](model, image, label, method)


# ---------------------------------------------------------------- pictures


def _implicit_panels(explanation: Explanation, t: int, named: bool) -> list[Panel]:
    """Row ``t``'s saliency and Grad-CAM panels, their titles led by the row's (``named``)."""
    implicit = explanation.implicit
    lead = f"{explanation.rows[t]} " if named else ""
    panels = [Panel(f"{lead}saliency", weights=implicit.saliency[t].numpy())]
    if implicit.gradcam is not None:
        panels.append(Panel(f"{lead}Grad-CAM", weights=implicit.gradcam[t].numpy()))
    return panels


def side_by_side(explanation: Explanation):
    """One row per step: the attention (or glimpse path), its saliency, its Grad-CAM."""
    rows = [
        [panel, *_implicit_panels(explanation, t, named=False)]
        for t, panel in enumerate(explanation.attention)
    ]
    return visual.panel_grid(explanation.image, rows, suptitle=explanation.suptitle)


def implicit_only(explanation: Explanation):
    """The implicit attention alone, steps across (as the attention grid has them): a row of
    saliency maps, a row of Grad-CAM maps; one row of both for a single step (the report puts
    this beside the attention)."""
    per_step = [_implicit_panels(explanation, t, named=True) for t in range(len(explanation.rows))]
    rows = per_step if len(per_step) == 1 else [list(kind) for kind in zip(*per_step)]
    return visual.panel_grid(explanation.image, rows, suptitle=f"{explanation.suptitle}: implicit")


def plot_explained(model_dir: Path, image: int | str | Path, out: str | Path) -> list[Path]:
    """``attnkit plot --explain``: the attention beside the implicit attention of test image N or
    an image file, to ``out`` (.png or .svg, or a directory that gets
    ``<type>-<name>-explained.png``). Returns the written paths."""
    cfg, _, model = load_vision_model(model_dir, "cpu")
    pixels, label, name = plot_input(cfg, image)
    paths = visual.picture_paths(out, f"{cfg.model_type}-{name}-explained")
    paths = [p for p in paths if p.suffix.lower() in visual.FIGURE_SUFFIXES]
    if not paths:
        raise ConfigError(f"-o {out}: --explain draws one picture: name a .png or .svg file")
    torch.manual_seed(0)
    figure = side_by_side(explain_image(cfg.model_type, model, pixels, label))
    return [visual.save_figure(figure, path) for path in paths]
