"""Task name -> train/dev/test splits and the metric that judges them."""

from __future__ import annotations

from collections.abc import Callable

from attnkit.data.tasks.base import Splits
from attnkit.errors import AttnkitError, ConfigError


def _numbers(cfg) -> Splits:
    from attnkit.data.tasks import numbers

    return numbers.generate(
        seed=cfg.seed,
        languages=tuple(cfg.languages),
        direction=cfg.direction,
        max_number=cfg.max_number,
    )


def _dates(cfg) -> Splits:
    from attnkit.data.tasks import dates

    return dates.generate(
        seed=cfg.seed, n_train=cfg.train_size, n_dev=cfg.dev_size, n_test=cfg.test_size
    )


def _parallel(cfg) -> Splits:
    from attnkit.data.tasks import parallel

    return parallel.load_splits(cfg.train, cfg.dev, cfg.test)


def _g2p(cfg) -> Splits:
    from attnkit.data.tasks import g2p

    return g2p.load(cfg.directory, download=cfg.download)


def _multi30k(cfg) -> Splits:
    from attnkit.data.tasks import multi30k

    return multi30k.load(
        cfg.directory, src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang, download=cfg.download
    )


#: task -> (split builder, metric family, primary metric key, higher is better)
TASK_REGISTRY: dict[str, tuple[Callable, str, str, bool]] = {
    "numbers": (_numbers, "exact", "exact_match", True),
    "dates": (_dates, "exact", "exact_match", True),
    "parallel": (_parallel, "exact", "exact_match", True),
    "g2p": (_g2p, "g2p", "wer", False),
    "multi30k": (_multi30k, "bleu", "bleu", True),
}


def build_splits(cfg) -> Splits:
    """The splits for ``cfg`` (a DataConfig); generator argument errors become ConfigErrors."""
    builder = task_info(cfg.task)[0]
    try:
        return builder(cfg)
    except AttnkitError:
        raise
    except ValueError as exc:
        raise ConfigError(f"data: {exc}") from None


def task_info(task: str) -> tuple[Callable, str, str, bool]:
    try:
        return TASK_REGISTRY[task]
    except KeyError:
        raise ConfigError(f"unknown task {task!r}; valid: {', '.join(TASK_REGISTRY)}") from None
