"""Training the toy family through attnkit's one driver: gradient descent on the sharpness,
an epoch of batches of lists, a dev evaluation after each epoch, ``best`` and ``last``."""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit.checkpoint import write_checkpoint
from attnkit.families.base import ConfigSummary, TrainRequest
from attnkit.training.loop import Update
from attnkit.training.report import DevScore
from attnkit.training.run import Context, Plan, Started, TrainSettings, run
from attnkit.training.state import TrainerState
from toyfamily.model import FAMILY, attend, lists


def describe(data: dict) -> ConfigSummary:
    return ConfigSummary("max", "softmax pooling")


class ToyAdapter:
    """What the loop asks of the toy family: batches of lists, an update, a dev score."""

    items = "lists"

    def __init__(self, out: Path, data: dict, lr: float):
        self.out, self.data = out, data
        self.sharpness = torch.zeros((), requires_grad=True)
        self.optimizer = torch.optim.SGD([self.sharpness], lr=lr)
        self.train, self.dev = lists(256, 8, seed=0), lists(200, 8, seed=1)

    def parameters(self):
        return [self.sharpness]

    def epoch_batches(self, state: TrainerState) -> list[torch.Tensor]:
        return list(self.train.split(32))

    def rate(self, state, index, n_batches, elapsed):
        return None  # SGD's constant rate

    def step(self, batch: torch.Tensor, update: int) -> Update:
        _, value = attend(self.sharpness, batch)
        loss = ((value - batch.max(-1).values) ** 2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        loss = loss.detach()
        return Update(loss, float(loss), 0, len(batch))

    def evaluate(self, state: TrainerState) -> DevScore:
        with torch.no_grad():
            _, value = attend(self.sharpness, self.dev)
        error = float((value - self.dev.max(-1).values).abs().mean())
        return DevScore({"mean_abs_error": error}, "mean_abs_error", higher_is_better=False)

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        weights = {"sharpness": self.sharpness.detach().clone()}
        write_checkpoint(self.out / name, FAMILY, weights, self.data, {"step": state.step})

    def saved(self, state: TrainerState, reason: str) -> None:
        """Nothing more."""


def train(data: dict, request: TrainRequest) -> Path:
    settings = dict(data.get("train") or {})
    lr = float(settings.pop("lr", 5.0))
    out = Path(request.output_dir or data["output_dir"])
    plan = Plan(out, TrainSettings(**settings), "lists", overwrite=request.overwrite)

    def start(context: Context) -> Started:
        context.log("training the toy family")
        return Started(ToyAdapter(out, data, lr), TrainerState(planned_epochs=plan.train.epochs))

    return run(plan, start)
