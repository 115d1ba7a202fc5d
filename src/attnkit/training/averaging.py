"""Checkpoint averaging (``train.average_checkpoints: N``, N >= 2).

While training, the weights of the N best dev evaluations are kept in
``RUN/top/step-XXXXXXX`` (pruned after every evaluation). At the end the means
of the 2, 3, .. N best and the best single checkpoint are all scored on dev, and
the best of them is saved as ``RUN/averaged``: with few evaluations the N best can
reach back to early, poor weights, whose mean is worse than the best one alone.
Its ``trainer.json`` says which was kept (``choice``) and lists every candidate.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from attnkit import checkpoint as ckpt
from attnkit.data.bounded import ascii_int


class CheckpointAverager:
    """Keeps the N best evaluations of one run and averages them at its end."""

    def __init__(
        self, run_dir: Path, n: int, metric: str, higher_is_better: bool, log: Callable[[str], None]
    ):
        self.top = Path(run_dir) / "top"
        self.averaged = Path(run_dir) / "averaged"
        self.n, self.metric, self.higher_is_better, self.log = n, metric, higher_is_better, log

    def top_steps(self, history: list) -> list[int]:
        """Updates of the N best dev evaluations, best first (the later one on a tie)."""
        sign = -1 if self.higher_is_better else 1
        ranked = sorted(history, key=lambda h: (sign * h["dev"][self.metric], -h["step"]))
        return [h["step"] for h in ranked[: self.n]]

    def keep(self, bundle, step: int, history: list) -> None:
        """Save this evaluation's weights if they rank among the N best; drop those that fell
        out."""
        keep = self.top_steps(history)
        if step in keep:
            bundle.save(
                self._dir(step), {"step": step, "metric": self.metric, "dev": history[-1]["dev"]}
            )
        for directory in self.top.glob("step-*"):
            if _step_of(directory) not in keep:
                shutil.rmtree(directory, ignore_errors=True)

    def average(self, bundle, history: list, score_dev: Callable[[], dict]) -> None:
        """Save the best of the candidates as ``averaged``; ``score_dev()`` scores the weights
        ``bundle`` holds at the time."""
        ranked = [s for s in self.top_steps(history) if (self._dir(s) / "meta.json").is_file()]
        if len(ranked) < 2:
            self.log(f"checkpoint averaging: {len(ranked)} evaluation(s) kept, nothing to average")
            return
        tensors = {s: ckpt.read_tensors(self._dir(s) / "model.safetensors") for s in ranked}
        candidates = [(ranked[0],)] + [tuple(ranked[:k]) for k in range(2, len(ranked) + 1)]
        scored = []
        for steps in candidates:
            bundle.model.load_state_dict(ckpt.average_tensors([tensors[s] for s in steps]))
            metrics = score_dev()
            scored.append((metrics, steps))
            self.log(
                f"checkpoint averaging: updates {_steps(steps)}: "
                f"dev {self.metric} {metrics[self.metric]}"
            )
        sign = 1 if self.higher_is_better else -1
        # the first of equals wins: the single checkpoint, then fewer checkpoints averaged
        best = max(range(len(scored)), key=lambda i: (sign * scored[i][0][self.metric], -i))
        metrics, steps = scored[best]
        bundle.model.load_state_dict(ckpt.average_tensors([tensors[s] for s in steps]))
        choice = "best single" if len(steps) == 1 else f"average of the {len(steps)} best"
        single = scored[0][0][self.metric]
        directory = bundle.save(
            self.averaged,
            {
                "averaged_steps": sorted(steps),
                "choice": choice,
                "metric": self.metric,
                "dev": metrics,
                "best_single": single,
                "candidates": [{"steps": sorted(c), "dev": m} for m, c in scored],
            },
        )
        self.log(
            f"checkpoint averaging: kept the {choice} (updates {_steps(steps)}): dev "
            f"{self.metric} {metrics[self.metric]} (best single {single}); "
            f"saved in {directory}"
        )

    def _dir(self, step: int) -> Path:
        return self.top / f"step-{step:07d}"


def _steps(steps) -> str:
    return ", ".join(map(str, sorted(steps)))


def _step_of(directory: Path) -> int | None:
    """``step-0001200`` -> 1200 (None for any other name)."""
    number = directory.name.partition("-")[2]
    return ascii_int(number)
