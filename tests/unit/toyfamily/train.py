"""Training the toy family: gradient descent on the sharpness, one checkpoint at the end."""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit.checkpoint import write_checkpoint
from attnkit.families.base import ConfigSummary, TrainRequest
from toyfamily.model import FAMILY, attend, lists


def describe(data: dict) -> ConfigSummary:
    return ConfigSummary("max", "softmax pooling")


def train(data: dict, request: TrainRequest) -> Path:
    settings = data.get("train") or {}
    out = Path(request.output_dir or data["output_dir"])
    sharpness = torch.zeros((), requires_grad=True)
    optimizer = torch.optim.SGD([sharpness], lr=float(settings.get("lr", 5.0)))
    train_lists = lists(256, 8, seed=0)
    for _ in range(int(settings.get("steps", 200))):
        _, value = attend(sharpness, train_lists)
        loss = ((value - train_lists.max(-1).values) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return write_checkpoint(out / "best", FAMILY, {"sharpness": sharpness.detach()}, data)
