"""The vision model types: how each is trained, scored and pictured.

:data:`MODEL_TYPES` maps ``model.type`` in a ``family: vision`` experiment
to a :class:`ModelKind`, which owns what training and pictures need of it: its training loss, its
count of correct predictions and its attention pictures (its config class, tasks and builder are
the model registry's, :data:`attnkit.models.vision.VISION_MODELS`, which checkpoints are built
from). :mod:`attnkit.families.vision.train` starts a run, which the training loop
drives through :mod:`attnkit.families.vision.adapter`; :mod:`attnkit.families.vision.evaluate`
scores a checkpoint and :mod:`attnkit.families.vision.pictures` draws it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention.hard import glimpse_boxes
from attnkit.data.tasks.vision import Split
from attnkit.models import show_attend_tell as sat
from attnkit.models.ram import hybrid_loss, predict
from attnkit.models.vision import VISION_MODELS
from attnkit.viz import visual

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# ---------------------------------------------------------------- data


class DeviceSplit:
    """A split as tensors on the training device: uint8 images, label tensors; ``batch(idx)`` cuts
    one."""

    def __init__(self, images: Tensor, labels: dict[str, Tensor]):
        self.images = images  # (N, H, W) uint8
        self.labels = labels

    def __len__(self) -> int:
        return self.images.shape[0]

    def batch(self, idx: Tensor) -> dict[str, Tensor]:
        images = self.images[idx].unsqueeze(1).float().div_(255.0)  # (b, 1, H, W) in [0, 1]
        return {"images": images, **{k: v[idx] for k, v in self.labels.items()}}


# ---------------------------------------------------------------- model families


class ModelKind:
    """How to train, score and picture one model type (the registry's entries); its config class,
    tasks and builder are the model registry's (:data:`attnkit.models.vision.VISION_MODELS`)."""

    model_type: str  # the key of VISION_MODELS

    @property
    def config_cls(self) -> type:
        return VISION_MODELS[self.model_type].config_cls

    @property
    def tasks(self) -> tuple[str, ...]:
        return VISION_MODELS[self.model_type].tasks

    def build(self, m) -> nn.Module:
        return VISION_MODELS[self.model_type].build(m)

    def label_tensors(self, labels) -> dict[str, Tensor]:
        return {"labels": torch.as_tensor(np.asarray(labels), dtype=torch.long)}

    def to_device(self, split: Split, device: torch.device) -> DeviceSplit:
        labels = {k: v.to(device) for k, v in self.label_tensors(split.labels).items()}
        return DeviceSplit(torch.from_numpy(np.ascontiguousarray(split.images)).to(device), labels)

    def train_step(self, model, batch: dict, m) -> tuple[Tensor, Tensor, Tensor]:
        """(loss to minimise, loss to report, number of correct predictions) of one training batch.

        The reported loss is the cross entropy (RAM's hybrid loss includes a
        REINFORCE term whose value says little about progress).
        """
        raise NotImplementedError

    def predict(self, model, batch: dict, m, mc_samples: int | None) -> Tensor:
        """The model's answers on a batch: class ids (B,), or a reader's tokens (B, T) padded like
        ``batch["targets"]``."""
        raise NotImplementedError

    def right(self, predictions: Tensor, batch: dict) -> Tensor:
        """(B,) bool: which answers of :meth:`predict` are right (a reader's: whole strings)."""
        return predictions == batch["labels"]

    def answers(self, predictions: Tensor) -> list[str]:
        """The answers of :meth:`predict` as text: "7", or a reader's digit string "4071"."""
        return [str(k) for k in predictions.tolist()]

    def count_correct(self, model, batch: dict, m, mc_samples: int | None) -> Tensor:
        return self.right(self.predict(model, batch, m, mc_samples), batch).sum()

    def dev_mc(self, m) -> int | None:
        return None

    def test_mc(self, m) -> int | None:
        return None

    def picture(self, model, image: np.ndarray, label, paths: list[Path], m) -> list[Path]:
        """Where ``model`` looks on one ``(H, W)`` uint8 image, drawn to each of ``paths`` by its
        suffix: ``.png`` / ``.svg`` the :meth:`figure`, ``.gif`` one frame per step. ``label``
        None: an image without a known answer (a user's file)."""
        raise NotImplementedError

    def figure(self, model, image: np.ndarray, label, m) -> Figure:
        """Where ``model`` looks on one ``(H, W)`` uint8 image, as one figure (PNG grid)."""
        raise NotImplementedError

    def steps(self, model, image: np.ndarray, label) -> list[dict]:
        """Where ``model`` looks on one ``(H, W)`` uint8 image, step by step, as plain data (the
        ``steps`` of the serve API's classify answer, drawn by the page and the report):
        ``{"attention": (h, w) nested lists | None, "glimpse": {"x", "y"} (centre in -1..1),
        "size" (pixels) | None, "token": str | None}`` per step."""
        raise NotImplementedError


def _step(attention=None, glimpse=None, token=None) -> dict:
    """One step of :meth:`ModelKind.steps`, numbers rounded for JSON."""
    att = None if attention is None else np.round(np.asarray(attention, np.float64), 5).tolist()
    return {"attention": att, "glimpse": glimpse, "token": token}


def _image_batch(model: nn.Module, image: np.ndarray) -> Tensor:
    """(H, W) uint8 -> (1, 1, H, W) in [0, 1], on the model's device."""
    device = next(model.parameters()).device
    return torch.from_numpy(np.ascontiguousarray(image)).float().div(255.0)[None, None].to(device)


def _pred_title(pred, label) -> str:
    if label is None:
        return f"pred {pred}"
    return f"pred {pred} ({'right' if str(pred) == str(label) else f'true {label}'})"


class RAMKind(ModelKind):
    model_type = "ram"

    def train_step(self, model, batch, m):
        loss = hybrid_loss(model(batch["images"], sample=True), batch["labels"], m.reinforce_weight)
        return loss.total, loss.classification, loss.reward.sum()

    def predict(self, model, batch, m, mc_samples):
        return predict(model, batch["images"], mc_samples or 1).argmax(dim=-1)  # of (B, 10)

    def dev_mc(self, m):
        return m.dev_mc_samples

    def test_mc(self, m):
        return m.mc_samples

    def glimpse_path(self, model, image, label):
        """(centres (G, 2), boxes (G, k, 3), titles, suptitle) of the glimpse path on ``image``."""
        height, width = image.shape
        with torch.no_grad():
            out = model(_image_batch(model, image), sample=False)  # the policy means: one path
        locations = out.locations[0].cpu()  # (G, 2)
        boxes = glimpse_boxes(locations, height, width, model.sensor.sizes).numpy()  # (G, k, 3)
        centres = boxes[:, 0, :2] + (boxes[:, 0, 2:] - 1) / 2.0  # (G, 2) pixel (x, y)
        titles = [f"glimpse {g + 1}/{len(boxes)}" for g in range(len(boxes))]
        return centres, boxes, titles, _pred_title(int(out.log_probs.argmax()), label)

    def steps(self, model, image, label):
        centres, boxes, _, _ = self.glimpse_path(model, image, label)
        height, width = image.shape
        return [
            _step(
                glimpse={  # pixel centre -> -1..1 across the image; the finest scale's side
                    "x": round(float((cx + 0.5) / width * 2 - 1), 5),
                    "y": round(float((cy + 0.5) / height * 2 - 1), 5),
                    "size": float(box[0, 2]),
                }
            )
            for (cx, cy), box in zip(centres.tolist(), boxes)
        ]

    def figure(self, model, image, label, m):
        centres, boxes, titles, top = self.glimpse_path(model, image, label)
        return visual.glimpse_grid(image, centres, boxes, titles, suptitle=top)

    def picture(self, model, image, label, paths, m):
        centres, boxes, titles, top = self.glimpse_path(model, image, label)
        for path in paths:
            if path.suffix.lower() == ".gif":
                visual.glimpse_gif(image, centres, boxes, titles, path, suptitle=top)
            else:
                grid = visual.glimpse_grid(image, centres, boxes, titles, suptitle=top)
                visual.save_figure(grid, path)
        return list(paths)


class SoftKind(ModelKind):
    """A model whose pictures are attention maps over the image, one per output step."""

    def maps(self, model, image, label) -> tuple[np.ndarray, list[str], str]:
        """(maps (T, h, w), one title per map, suptitle) on one image."""
        raise NotImplementedError

    def figure(self, model, image, label, m):
        maps, titles, top = self.maps(model, image, label)
        return visual.attention_grid(image, maps, titles, suptitle=top)

    def picture(self, model, image, label, paths, m):
        maps, titles, top = self.maps(model, image, label)
        for path in paths:
            if path.suffix.lower() == ".gif":
                visual.attention_gif(image, maps, titles, path, suptitle=top)
            else:
                visual.save_figure(visual.attention_grid(image, maps, titles, suptitle=top), path)
        return list(paths)


class ReaderKind(SoftKind):
    model_type = "show_attend_tell"

    def label_tensors(self, labels):
        inputs, targets = sat.encode_strings(list(labels), max(map(len, labels)))
        return {"inputs": inputs, "targets": targets}

    def train_step(self, model, batch, m):
        out = model(batch["images"], batch["inputs"])
        loss, ce = sat.reader_loss(out, batch["targets"], m.doubly_stochastic)
        targets = batch["targets"]
        right = (out.logits.argmax(dim=-1) == targets) | (targets == sat.PAD)  # teacher-forced
        return loss, ce, right.all(dim=1).sum()

    def predict(self, model, batch, m, mc_samples):
        targets = batch["targets"]  # (B, T)
        tokens, _, _ = model.greedy(batch["images"], targets.shape[1])  # (B, T') T' <= T
        tokens = F.pad(tokens, (0, targets.shape[1] - tokens.shape[1]), value=sat.PAD)
        after_eos = (tokens == sat.EOS).long().cumsum(dim=1) - (tokens == sat.EOS).long() > 0
        return tokens.masked_fill(after_eos, sat.PAD)  # (B, T)

    def right(self, predictions, batch):
        return (predictions == batch["targets"]).all(dim=1)

    def answers(self, predictions):
        return sat.decode_tokens(predictions.cpu())

    def _read(self, model, image, label) -> tuple[np.ndarray, list[str], str]:
        """(maps (T, h, w), the token read at each step, the answer) on one image."""
        with torch.no_grad():
            x = _image_batch(model, image)  # (1, 1, H, W)
            tokens, weights, (h, w) = model.greedy(x, _picture_steps(label))
        tokens = tokens.cpu()
        names = [str(t) if t < 10 else "<eos>" for t in tokens[0].tolist()]
        maps = weights[0].reshape(-1, h, w).cpu().numpy()  # (T, h, w)
        return maps, names, sat.decode_tokens(tokens)[0]

    def maps(self, model, image, label):
        maps, names, answer = self._read(model, image, label)
        titles = [f"step {t + 1}: {name}" for t, name in enumerate(names)]
        return maps, titles, _pred_title(answer, label)

    def steps(self, model, image, label):
        maps, names, _ = self._read(model, image, label)
        return [_step(attention=a, token=name) for a, name in zip(maps, names)]


def _picture_steps(label: str | None) -> int:
    """Greedy decoding length for a picture: enough for any strip (5 digits + EOS, or the
    label's)."""
    return max(len(label) if label is not None else 0, 5) + 1


class PoolingKind(SoftKind):
    model_type = "attention_pooling"

    def train_step(self, model, batch, m):
        out = model(batch["images"])
        loss = F.nll_loss(out.log_probs, batch["labels"])
        return loss, loss, (out.log_probs.argmax(-1) == batch["labels"]).sum()

    def predict(self, model, batch, m, mc_samples):
        return model(batch["images"]).log_probs.argmax(-1)

    def maps(self, model, image, label):
        with torch.no_grad():
            out = model(_image_batch(model, image))
        maps = out.weights.reshape(1, *out.grid).cpu().numpy()  # (1, h, w)
        return maps, ["attention"], _pred_title(int(out.log_probs.argmax()), label)

    def steps(self, model, image, label):
        maps, _, _ = self.maps(model, image, label)
        return [_step(attention=maps[0])]


#: model.type -> how to build / train / evaluate / picture it
MODEL_TYPES: dict[str, ModelKind] = {
    "ram": RAMKind(),
    "show_attend_tell": ReaderKind(),
    "attention_pooling": PoolingKind(),
}
