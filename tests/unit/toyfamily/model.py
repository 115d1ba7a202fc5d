"""The toy family's API object: a checkpoint's sharpness, attention over numbers, scores."""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit.checkpoint import checkpoint_dir, read_meta, read_tensors
from attnkit.errors import CheckpointError
from attnkit.evaluation.scores import Scores

FAMILY = "toy"


def attend(sharpness: torch.Tensor, numbers: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights (B, S), pooled value (B,)) of numbers (B, S)."""
    weights = torch.softmax(sharpness * numbers, dim=-1)
    return weights, (weights * numbers).sum(-1)


def lists(count: int, length: int, seed: int) -> torch.Tensor:
    """``count`` lists of ``length`` numbers in [0, 1), the same for the same seed."""
    return torch.rand(count, length, generator=torch.Generator().manual_seed(seed))


class ToyModel:
    family = FAMILY

    def __init__(self, path: Path, sharpness: float):
        self.path, self.sharpness = path, sharpness

    @classmethod
    def load(cls, path, device: str = "auto") -> ToyModel:
        path = checkpoint_dir(path)  # a run directory: its best/
        read_meta(path, FAMILY)
        tensors = read_tensors(path / "model.safetensors")
        if set(tensors) != {"sharpness"} or tensors["sharpness"].numel() != 1:
            raise CheckpointError(f"{path}: a toy checkpoint holds one tensor, 'sharpness'")
        return cls(path, float(tensors["sharpness"]))

    def attend(self, numbers: list[float]) -> tuple[list[float], float]:
        weights, value = attend(torch.tensor(self.sharpness), torch.tensor([numbers]))
        return weights[0].tolist(), float(value[0])

    def evaluate(self, split: str = "test", out=None) -> Scores:
        data = lists(200, 8, {"dev": 1, "test": 2}.get(split, 3))
        _, value = attend(torch.tensor(self.sharpness), data)
        error = float((value - data.max(-1).values).abs().mean())
        return Scores(
            {"task": "max", "split": split, "mean_abs_error": error},
            lambda s: f"{s['split']}: mean absolute error {s['mean_abs_error']:.4f}",
        )
