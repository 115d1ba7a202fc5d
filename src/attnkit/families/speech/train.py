"""Training for the speech family (``family: speech``): Listen, Attend and Spell (CTC, or the
Transformer over frames) on spoken numbers, through the one driver (:mod:`attnkit.training.run`)
and :class:`SpeechAdapter`.

The splits are spoken once (:func:`attnkit.data.tasks.speech_set.make_set`, from the audio cache
where it can). LAS and the Transformer learn by teacher forcing (the negative log-likelihood of
every digit and ``</s>``); CTC by its loss over the digits (no ``</s>``: the frames end the
spelling). Dev is scored by greedy spelling (exact match decides ``best``).
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from torch import Tensor

from attnkit.config import apply_overrides
from attnkit.data.tasks.speech_set import EOS, PAD, SpeechSet, decode, make_set
from attnkit.families.base import TrainRequest
from attnkit.families.speech.bundle import build_model
from attnkit.families.speech.config import FAMILY, SpeechExperiment, parse_config
from attnkit.families.speech.evaluate import dev_scorer
from attnkit.models.ctc import CTC, collapse
from attnkit.training import resumable as resumable_run
from attnkit.training import resume_config as rules
from attnkit.training import schedules
from attnkit.training.loop import Update
from attnkit.training.report import DevScore
from attnkit.training.run import Context, Plan, Started, run
from attnkit.training.state import TrainerState

__all__ = ["SpeechAdapter", "ctc_step", "nll", "train", "train_speech"]

#: what a resumed run may change: how and when it runs, and the dev batch size (as memnet's)
_RESUME_RULES = rules.Rules(honoured=rules.MEMNET.honoured, locating=("output_dir",))


def nll(log_probs: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, int]:
    """Mean negative log-likelihood of the target outputs: log_probs (B, U, V), targets (B, U)
    (:data:`PAD` past the end) -> loss, correct argmax outputs, counted outputs."""
    keep = targets != PAD
    picked = log_probs.gather(-1, targets.clamp_min(0).unsqueeze(-1)).squeeze(-1)  # (B, U)
    count = int(keep.sum())
    loss = -(picked * keep).sum() / max(count, 1)
    correct = ((log_probs.argmax(-1) == targets) & keep).sum()
    return loss, correct, count


def ctc_step(model: CTC, features: Tensor, lengths: Tensor, targets: Tensor):
    """CTC's loss on a batch: targets (B, U) ending ``</s>`` then :data:`PAD` -> loss (mean
    per digit), utterances spelled exactly by the best path, utterances."""
    digits = targets.masked_fill(targets == EOS, PAD)  # CTC spells no </s>
    log_probs, frame_lengths = model(features, lengths)  # (B, S, V)
    loss = model.loss(log_probs, frame_lengths, digits)
    best = log_probs.detach().argmax(-1).tolist()  # (B, S)
    right = sum(
        decode(collapse(row[:n], model.blank)) == decode(target)
        for row, n, target in zip(best, frame_lengths.tolist(), targets.tolist())
    )
    return loss, right, len(best)


class SpeechAdapter:
    """The speech family's part of the training loop (see :class:`FamilyAdapter`)."""

    items = "utterances"

    def __init__(self, cfg: SpeechExperiment, out: Path, model, optimizer, sets):
        self.cfg, self.out, self.model, self.optimizer = cfg, out, model, optimizer
        self.train_set, self.dev_set = sets
        self.device = next(model.parameters()).device
        self.generator = torch.Generator().manual_seed(cfg.train.seed)
        self.drawn = 0  # the epochs whose order the generator has drawn

    def parameters(self):
        return self.model.parameters()

    def epoch_batches(self, state: TrainerState) -> list[Tensor]:
        """Epoch ``state.epoch``'s batches of item indices (a resumed run draws the epochs
        before it again first, so its orders are the first run's)."""
        while True:
            order = torch.randperm(len(self.train_set), generator=self.generator)
            self.drawn += 1
            if self.drawn > state.epoch:
                return list(order.split(self.cfg.train.batch_size))

    def rate(self, state, index, n_batches, elapsed):
        """Adam's constant rate (None: left as it is), or during ``train.warmup_steps`` its
        linear rise, from the saved step (a resumed run goes on at the rate it left)."""
        t_cfg = self.cfg.train
        if not t_cfg.warmup_steps:
            return None
        return schedules.warm_up(t_cfg.lr, state.step, t_cfg.warmup_steps)

    def step(self, batch: Tensor, update: int) -> Update:
        self.model.train()
        features, lengths, targets = self.train_set.batch(batch.tolist())
        targets, features = targets.to(self.device), features.to(self.device)
        if isinstance(self.model, CTC):  # accuracy: of whole utterances, not of outputs
            loss, correct, count = ctc_step(self.model, features, lengths, targets)
        else:
            log_probs, _ = self.model(features, lengths, targets)
            loss, correct, count = nll(log_probs, targets)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        loss = loss.detach()
        return Update(loss, float(loss), int(correct), count)

    def evaluate(self, state: TrainerState) -> DevScore:
        dev = dev_scorer(self.model, self.dev_set, self.cfg.train.eval_batch_size)
        figures = {k: dev[k] for k in ("exact_match", "cer")}
        return DevScore(figures, dev["metric"], dev["higher_is_better"])

    def save(self, name: str, state: TrainerState, resumable: bool) -> None:
        optimizer = self.optimizer if resumable else None
        resumable_run.save_checkpoint(
            self.out / name, FAMILY, self.model, self.cfg.to_dict(), state, optimizer
        )

    def saved(self, state: TrainerState, reason: str) -> None:
        """Nothing more: the run's last line says why it stopped."""


def train_speech(
    config: dict,
    output_dir: Path | None = None,
    source: str = "config",
    overwrite: bool = False,
    overrides=None,
    resume: bool = False,
) -> Path:
    """Train the experiment ``config`` (the parsed YAML, ``overrides`` applied); returns
    ``OUT/best``."""
    cfg = parse_config(apply_overrides(config, overrides or ()), source)
    out = Path(output_dir) if output_dir is not None else Path(cfg.output_dir)
    if resume:
        cfg = resumable_run.config_to_resume(
            cfg, out / "last", overrides or (), source, parse_config, _RESUME_RULES
        )
    plan = Plan(out, cfg.train, "utterances", resume, overwrite, source)
    return run(plan, lambda context: _start(cfg, context))


def _start(cfg: SpeechExperiment, context: Context) -> Started:
    """The spoken splits, the model and optimizer (fresh, or ``last``'s) and the adapter."""
    out, device = context.plan.out, context.device
    began = time.perf_counter()
    sets: tuple[SpeechSet, SpeechSet] = (make_set(cfg.data, "train"), make_set(cfg.data, "dev"))
    model = build_model(cfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
    state = TrainerState(planned_epochs=cfg.train.epochs)
    if context.plan.resume:
        state = resumable_run.restore(out / "last", FAMILY, model, optimizer)
        state.stopped, state.planned_epochs = "", cfg.train.epochs
    parameters = sum(p.numel() for p in model.parameters())
    context.log(
        f"speech {', '.join(cfg.data.languages)} 0..{cfg.data.max_number}: {len(sets[0])} train "
        f"/ {len(sets[1])} dev utterances (spoken in {time.perf_counter() - began:.1f}s); "
        f"{_describe(cfg)}; {parameters:,} parameters; device {device}"
    )
    return Started(SpeechAdapter(cfg, out, model, optimizer, sets), state)


def _describe(cfg: SpeechExperiment) -> str:
    if cfg.model.kind == "ctc":
        return "CTC (no attention)"
    if cfg.model.kind == "transformer":
        return "Transformer over frames"
    return f"{cfg.model.attention} attention"


def train(data: dict, request: TrainRequest) -> Path:
    """``attnkit.train`` of a speech experiment: its best checkpoint."""
    return train_speech(data, **request.run_options())
