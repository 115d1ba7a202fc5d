"""The whole ``train:`` table (:data:`KEYS`: :data:`attnkit.train_keys.OPTIMISATION`, then the keys
of when a run stops, where it runs and what it shows) and the values a key takes per family
(:data:`CHOICES`). :mod:`attnkit.train_config` makes each family's ``TrainConfig`` from them.
"""

from __future__ import annotations

from attnkit.accel.backend import BACKENDS
from attnkit.config import above, at_least
from attnkit.train_keys import (
    _THREADS,
    GRAPH,
    MEMNET,
    OPTIMISATION,
    POINTER,
    SEQ2SEQ,
    TEXT,
    VISION,
    Key,
    _rows,
)

#: what ``train.progress`` and ``train.verbose`` mean, the same in every family (the driver's
#: output: :mod:`attnkit.training.progress`)
_PROGRESS = (
    "A progress bar on stderr when it is a terminal (loss, accuracy, items/s, rate), or one "
    "updating line in a Jupyter notebook, with each dev evaluation's line shown on it."
)
_VERBOSE = (
    "Print the run's lines on stderr: its setup, a line per dev evaluation (where the run is, the "
    "dev score, the training loss and accuracy, the rate, the time) and its last line. "
    "train.log keeps them either way."
)

#: the keys of when a run stops, where it runs and what it shows
RUNNING: dict[str, Key] = {
    "patience": Key(
        int | None,
        at_least(1, null=True),  # null: no early stopping
        _rows(
            pointer=(
                5,
                "early stopping: evaluations without a better dev exact match (null: never)",
            ),
            seq2seq=(
                5,
                "early stopping: evaluations without improvement (None = never stop early)",
            ),
            vision=(
                20,
                "Early stopping: stop after this many epochs without a lower dev error "
                "(null: never).",
            ),
            graph=(
                100,
                "Early stopping: stop after this many epochs in which neither the dev accuracy "
                "reached its best nor the dev loss its lowest (null: never).",
            ),
            text=(
                3,
                "Early stopping: stop after this many evaluations (epochs, or every eval_every "
                "updates) without a higher dev accuracy (null: never).",
            ),
            memnet=(
                None,
                "Early stopping: stop after this many epochs without a lower dev error (null: "
                "never).",
            ),
        ),
    ),
    "average_checkpoints": Key(
        int,
        at_least(0),
        _rows(
            seq2seq=(
                0,
                "N >= 2: keep the N best evaluations in run_dir/top, average them into "
                "run_dir/averaged",
            ),
            text=(
                0,
                "N >= 2: keep the N best dev evaluations in output_dir/top; at the end the best "
                "of their means (or the best single one) is output_dir/averaged",
            ),
        ),
    ),
    "eval_every": Key(
        int,
        at_least(0),
        _rows(
            pointer=(0, "updates between dev evaluations (0 = once per epoch)"),
            seq2seq=(0, "updates between dev evaluations (0 = once per epoch)"),
            text=(0, "updates between dev evaluations (0 = once per epoch)"),
        ),
    ),
    "max_minutes": Key(
        float | None,
        above(0, null=True),
        _rows(
            pointer=(None, "time budget for training (null: none)"),
            seq2seq=(
                None,
                "time budget for training, in minutes: the run's total, its resumed parts "
                "included (2.5 on resuming a run that trained 2.2 gives 0.3 more)",
            ),
            vision=(
                None,
                "Wall-clock budget for training (null: none); training stops when it is spent. "
                "It is the run's total, its resumed parts included.",
            ),
            graph=(None, "Wall-clock budget for training (null: none)."),
            text=(
                None,
                "Wall-clock budget for training (null: none); training stops when it is spent.",
            ),
            memnet=(
                None,
                "Wall-clock budget for training (null: none); training stops when it is spent.",
            ),
        ),
    ),
    "fit_schedule_to_budget": Key(
        bool,
        None,
        _rows(
            vision=(
                True,
                "With max_minutes: shorten the planned epochs (and the LR schedule) to what the "
                "budget allows.",
            )
        ),
    ),
    "seed": Key(
        int,
        (lambda v: 0 <= v < 2**32, "a whole number in [0, 4294967295]"),  # numpy's range
        _rows(
            pointer=(1, "seed of the initialisation and the batch order"),
            seq2seq=(1, "seed of the initialisation, the batch order and dropout"),
            vision=(0, "Seed of the model initialisation and of the batch order."),
            graph=(0, "Seed of the initialisation and of dropout."),
            text=(0, "Seed of the model initialisation, dropout and the batch order."),
            memnet=(0, "Seed of the initialisation, the batch order and the random noise."),
        ),
    ),
    "device": Key(
        str,
        None,
        _rows(
            pointer=("auto", "auto | cpu | cuda"),
            seq2seq=("auto", "auto | cpu | cuda"),
            vision=("auto", "auto (CUDA when available), cpu or cuda."),
            graph=("auto", "auto (CUDA when available), cpu or cuda."),
            text=("auto", "auto (CUDA when available), cpu or cuda."),
            memnet=("cpu", "cpu (the model is tiny: a GPU gains nothing), auto or cuda."),
        ),
    ),
    "threads": Key(
        int | None,
        _THREADS,
        _rows(
            pointer=(0, "torch CPU threads (0 or null = torch's default)"),
            seq2seq=(0, "torch CPU threads (0 or null = torch's default)"),
            vision=(None, "CPU threads for torch (null or 0: torch's default)."),
            graph=(None, "CPU threads for torch (null or 0: torch's default)."),
            text=(None, "CPU threads for torch (null or 0: torch's default)."),
            memnet=(
                1,
                "CPU threads for torch (null or 0: torch's default; the model is tiny: 1 is "
                "fastest).",
            ),
        ),
    ),
    "backend": Key(
        str,
        None,
        _rows(
            seq2seq=(
                "auto",
                "how the model is computed (attnkit.accel.backend): auto | reference | fused | "
                "native | compile",
            ),
            vision=(
                "auto",
                "How the training step is computed: auto (eager, with attnkit's C kernels where "
                "they fit: the additive attention scores on a CPU), reference (plain eager "
                "PyTorch, no kernels) or compile (torch.compile: fewer, fused kernels; the first "
                "steps compile for a minute).",
            ),
        ),
    ),
    "progress": Key(
        bool,
        None,
        _rows(
            **{family: (True, _PROGRESS) for family in (POINTER, SEQ2SEQ, VISION, TEXT)},
            memnet=(False, _PROGRESS),
            graph=(False, _PROGRESS + " An epoch is one update: off by default."),
        ),
    ),
    "verbose": Key(
        bool,
        None,
        _rows(
            **{family: (True, _VERBOSE) for family in (POINTER, SEQ2SEQ, VISION, TEXT, MEMNET)},
            graph=(True, _VERBOSE + " A graph's: every 50 epochs and when it is best."),
        ),
    ),
    "linear_start": Key(
        int,
        at_least(0),
        _rows(
            memnet=(
                20,
                "Linear start: the first N epochs train without the softmax of the memory hops "
                "(the paper's LS; 0: off).",
            )
        ),
    ),
    "restart_after_linear_start": Key(
        bool,
        None,
        _rows(
            memnet=(
                False,
                "Keep train.lr constant through linear start and count the step decay from its "
                "end (the paper's reference code: 20 linear epochs at 0.005, then 100 more "
                "halving every 25); false: one step decay from epoch 0.",
            )
        ),
    ),
    "tensorboard": Key(
        bool,
        None,
        _rows(
            pointer=(True, "event files in run_dir/tensorboard: loss, accuracy, dev metrics"),
            seq2seq=(
                True,
                "event files in run_dir/tensorboard: scalars, dev metrics, attention",
            ),
            vision=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev metrics, attention "
                "pictures.",
            ),
            graph=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev metrics, attention "
                "pictures.",
            ),
            text=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev accuracy, the "
                "attention over a few dev sentences.",
            ),
            memnet=(
                True,
                "TensorBoard event files in OUT/tensorboard: scalars, dev figures, hop-by-hop "
                "attention.",
            ),
        ),
    ),
}

#: every ``train:`` key of every family, in the order the sections list them (the order each
#: family's checkpoints save them in)
KEYS: dict[str, Key] = {**OPTIMISATION, **RUNNING}

#: the values a key takes, where they are a list, per family
CHOICES: dict[str, dict[str, tuple]] = {
    SEQ2SEQ: {
        "scheduler": ("plateau", "cosine", "constant", "noam"),
        "device": ("auto", "cpu", "cuda"),
        "backend": BACKENDS,
    },
    POINTER: {"scheduler": ("constant", "cosine"), "device": ("auto", "cpu", "cuda")},
    GRAPH: {"device": ("auto", "cpu", "cuda")},
    VISION: {
        "scheduler": ("cosine", "step", "noam", "constant"),
        "device": ("auto", "cpu", "cuda"),
        "backend": ("auto", "reference", "compile"),
    },
    TEXT: {
        "scheduler": ("constant", "cosine", "noam"),
        "device": ("auto", "cpu", "cuda"),
    },
    MEMNET: {"scheduler": ("step", "constant"), "device": ("auto", "cpu", "cuda")},
}
