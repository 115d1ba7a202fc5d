"""Training a seq2seq experiment: data -> vocabularies -> model -> updates -> checkpoints.

Adam with gradient clipping (``train.clip``; 0 or null: none); learning-rate schedule
(:mod:`attnkit.training.schedules`) ``plateau`` (cut on a stalled dev metric), ``cosine``
(down to ``min_lr`` by the end of the epochs or of the time budget), ``noam`` (warm-up then
1/sqrt decay) or ``constant``;
early stopping on the dev metric; TensorBoard (``train.tensorboard``) with dev metrics and
attention heatmaps.
``run_dir/best`` holds what decoding needs (weights, config, vocabularies, counters);
``run_dir/last`` also the optimizer, schedule and RNG, and ``resume=True`` continues from it
exactly where it stopped, once every part of its trainer state is checked against this run
(:mod:`attnkit.training.resume`) and its config against the saved one
(:mod:`attnkit.training.resume_config`).
An update whose loss or gradient norm is NaN or inf is skipped, and
``train.max_bad_updates`` of them in a row end the run (:mod:`attnkit.training.guard`).
Started by ``torchrun --nproc_per_node N -m attnkit train CONFIG``, N processes share every
batch through DistributedDataParallel and rank 0 evaluates and saves
(:mod:`attnkit.training.distributed`).

Checkpoint averaging (``train.average_checkpoints: N``, N >= 2): the weights of
the N best dev evaluations are kept in ``run_dir/top/step-XXXXXXX`` (pruned to N
after every evaluation); at the end their element-wise mean is saved as
``run_dir/averaged``, scored on dev, and the score is logged and written to its
``trainer.json``. The means of the 2, 3, .. N best are all scored, and ``averaged``
holds the best of them, or the best single checkpoint where no mean beats it
(``choice`` in its trainer.json says which). Every one of these directories loads with
``attnkit.load`` (or ``Translator.load``).

The run, its log lines, progress bar and files are the driver's (:mod:`attnkit.training.run`)
and the loop's (:mod:`attnkit.training.loop`), shared by every family; what is seq2seq's in
the updates and evaluations is :mod:`attnkit.families.seq2seq.adapter`. The trainer builds the
run (model, vocabularies, backend, DDP) and finishes it (the final checkpoints, averaging).
What it trains is a :class:`~attnkit.families.seq2seq.bundle.Seq2SeqBundle` (model, config,
tokenizers and vocabularies), which is also what it saves. It is given its dev scorer
(``dev_scorer``, called with the bundle; :mod:`attnkit.families.seq2seq.train` passes
:func:`attnkit.families.seq2seq.evaluate.evaluate_translator`, a test may pass another).
"""

from __future__ import annotations

from pathlib import Path

from attnkit.accel.backend import resolve as resolve_backend
from attnkit.data.tasks.base import Splits
from attnkit.data.tasks.registry import build_splits, task_metric
from attnkit.errors import AttnkitError, ConfigError
from attnkit.families.seq2seq.adapter import DevScorer, Seq2SeqAdapter
from attnkit.families.seq2seq.bundle import Seq2SeqBundle
from attnkit.families.seq2seq.checkpoints import RunCheckpoints, restore_scaler
from attnkit.families.seq2seq.config import ExperimentConfig
from attnkit.families.seq2seq.setup import checkpoint_bytes, starting_point, training_examples
from attnkit.training import distributed, precision, rundir
from attnkit.training.run import Context, Plan, Started, run
from attnkit.training.state import TrainerState


class Trainer:
    """A seq2seq run: its data, set up before the run starts (``splits``: the task's by
    default), and :meth:`train`, which runs it in the driver (:mod:`attnkit.training.run`).
    ``log_fn`` takes the run's lines instead of stderr."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        splits: Splits | None = None,
        log_fn=None,
        *,
        dev_scorer: DevScorer,
    ):
        self.cfg, self.dev_scorer = cfg, dev_scorer
        self.run_dir = cfg.run_dir
        self.log_fn = log_fn
        self.log = log_fn or (lambda message: None)  # the run's log, once it starts
        metric = task_metric(cfg.data)  # the task's, or the parallel task's data.metric
        self.family, self.metric = metric.family, metric.key
        self.higher_is_better = metric.higher_is_better
        self.splits = splits or build_splits(cfg.data)
        for name in ("train", "dev"):
            if not getattr(self.splits, name):
                raise AttnkitError(f"the {name} split of task {cfg.data.task!r} is empty")

    def train(self, resume: bool = False, overwrite: bool = False) -> Path:
        """Train until epochs, patience or time budget run out; returns the best checkpoint.

        The run directory is locked meanwhile; a fresh run refuses one holding checkpoints unless
        ``overwrite``. SIGINT/SIGTERM save ``last`` after the current update and raise
        :class:`attnkit.errors.TrainingInterrupted`. Under torchrun, N processes share every
        batch through DistributedDataParallel and rank 0 evaluates and saves.
        """
        plan = Plan(
            out=self.run_dir,
            train=self.cfg.train,
            items="tokens",
            resume=resume,
            overwrite=overwrite,
            source=str(self.run_dir),
            data_parallel=True,
            echo=self.log_fn,
        )
        return run(plan, lambda context: self._start(context, resume))

    def _start(self, context: Context, resume: bool) -> Started | None:
        """The bundle, optimizer and schedule (fresh, or ``last``'s), the backend and the
        adapter; None where the run's epochs are all done."""
        tc, d = self.cfg.train, self.cfg.data
        self.log, device, dist = context.log, context.device, context.dist
        checkpoints = RunCheckpoints(self.cfg, self.metric, self.higher_is_better, self.log)
        main = context.is_main
        bundle, state, optimizer, scheduler = distributed.on_all(
            dist,
            lambda: starting_point(self.cfg, self.splits, device, resume, context.log.notice, main),
        )
        context.on_main(lambda: rundir.check_space(self.run_dir, checkpoint_bytes(bundle.model)))
        if state.epoch >= tc.epochs:
            self.log(
                f"{self.run_dir}: all {tc.epochs} epochs are done; raise train.epochs to train on"
            )
            return None
        state.finished = False
        state.planned_epochs = tc.epochs
        model = bundle.model
        precision.check(tc.precision, device)
        # resolved before DDP wraps the model: every rank runs the same computation
        backend = resolve_backend(_backend(tc), device, next(model.parameters()).dtype)
        model.set_backend(backend)
        checkpoints.backend_record = backend.record()
        self.log(model.describe_backend(backend))
        if tc.precision != "fp32":
            self.log(_precision_line(tc))
        examples = training_examples(bundle.sides, self.splits, self.cfg)
        self.log(
            f"{d.task}: {len(self.splits.train)} train / {len(self.splits.dev)} dev / "
            f"{len(self.splits.test)} test pairs; vocab {len(bundle.sides.src_vocab)} -> "
            f"{len(bundle.sides.tgt_vocab)}; {sum(p.numel() for p in model.parameters()):,} "
            f"parameters; device {device}"
        )
        scaler = precision.scaler(tc.precision, device)
        if scaler is not None:
            checkpoints.scaler = scaler  # saved in last's trainer state, and read back on resume
            if resume:
                restore_scaler(self.run_dir / "last", scaler)
        train_model = model
        if dist is not None:
            seed = tc.seed * 1000003 + dist.rank * 7919 + state.step
            train_model = distributed.start_data_parallel(dist, bundle, examples, seed, self.log)
        score_dev = lambda: self._score_dev(bundle)  # noqa: E731
        adapter = Seq2SeqAdapter(
            self.cfg,
            bundle,
            train_model,
            optimizer,
            scheduler,
            examples,
            checkpoints,
            score_dev,
            device,
            dist,
            scaler,
        )

        def finish(state: TrainerState) -> None:
            state.finished = True
            context.on_main(
                lambda: checkpoints.finish(
                    bundle, state, optimizer, scheduler, lambda: score_dev()[0]
                )
            )

        return Started(adapter, state, finish)

    def _score_dev(self, bundle: Seq2SeqBundle):
        """Greedy dev (metrics, sources, references, translations) of the weights it holds."""
        return self.dev_scorer(bundle, self.family, self.splits.dev, beam_size=1)


def train_experiment(
    cfg: ExperimentConfig, resume: bool = False, overwrite: bool = False, *, dev_scorer: DevScorer
) -> Path:
    return Trainer(cfg, dev_scorer=dev_scorer).train(resume=resume, overwrite=overwrite)


def _backend(tc) -> str:
    """The backend to resolve: below float32, the RNN trains through the autograd path, which
    autocast reaches (``auto`` picks ``fused``); the native kernels, whose handwritten backward
    computes in float32, are refused."""
    if tc.precision == "fp32":
        return tc.backend
    if tc.backend == "native":
        raise ConfigError(
            f"train.backend: native computes in float32 (its handwritten backward is beyond "
            f"autocast); with train.precision: {tc.precision} use backend auto or fused"
        )
    return "fused" if tc.backend == "auto" else tc.backend


def _precision_line(tc) -> str:
    """The run's line on a precision below float32."""
    how = "autocast" if tc.precision == "bf16" else "autocast with loss scaling"
    auto = "; backend auto: fused, the autograd path" if tc.backend == "auto" else ""
    return (
        f"precision: {tc.precision} ({how} in the training forward; weights, checkpoints and "
        f"evaluation in float32{auto})"
    )
