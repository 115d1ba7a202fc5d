"""``train`` keys of earlier versions, in both families' experiment files.

Seq2seq and vision experiments name the same settings alike (``clip``, ``threads``,
``scheduler``, ``min_lr``, ``warmup_steps``, ``backend``, a top-level ``output_dir``). A key
of an earlier version in what a person wrote (a file, ``--set``) is a one-line ConfigError
naming the key that replaced it; in a checkpoint's saved config (written before the change)
it is translated, so old checkpoints still evaluate, plot and resume.
"""

from __future__ import annotations

from attnkit.config import join_key
from attnkit.errors import ConfigError

#: old train key -> the train key that holds the same setting now
RENAMED = {"grad_clip": "clip", "num_threads": "threads", "lr_schedule": "scheduler"}

#: old train key -> what to write instead (the setting changed as well as its name)
REPLACED = {
    "min_lr_ratio": "replaced by train.min_lr, the cosine floor itself (lr x the old ratio)",
    "warmup_epochs": "replaced by train.warmup_steps, the warm-up in updates",
    "compile": "replaced by train.backend; write `backend: compile` in the train section instead",
    "output_dir": "moved to output_dir at the top level of the file",
}


def upgrade_train_keys(data: dict, source: str, user: bool) -> dict:
    """``data`` (an experiment mapping) with the train keys of earlier versions dealt with.

    ``user``: ``data`` is what a person wrote, and an old key is a ConfigError (except
    ``compile: false``, which means the default and is dropped); otherwise it is a
    checkpoint's saved config and old keys are translated. Returns a new mapping when it
    changes anything.
    """
    train = data.get("train")
    if not isinstance(train, dict) or not (set(train) & (set(RENAMED) | set(REPLACED))):
        return data
    train, top = dict(train), {k: v for k, v in data.items() if k != "train"}
    for old in [k for k in train if k in RENAMED or k in REPLACED]:
        value = train.pop(old)
        if old == "compile" and value is False:  # the default then and now
            continue
        if user or (old == "compile" and value is not True):
            where = join_key(join_key(source, "train"), old)
            what = f"renamed to train.{RENAMED[old]}" if old in RENAMED else REPLACED[old]
            raise ConfigError(f"{where}: {what}")
        _translate(old, value, train, top)
    return {**top, "train": train}


def _translate(old: str, value, train: dict, top: dict) -> None:
    """Put a saved config's old ``train.<old>: value`` where the current key reads it."""
    if old in RENAMED:
        train.setdefault(RENAMED[old], value)
    elif old == "min_lr_ratio":
        lr = train.get("lr", 1e-3)
        numbers = all(type(v) in (int, float) for v in (lr, value))  # else min_lr's check names it
        train.setdefault("min_lr", lr * value if numbers else value)
    elif old == "compile":
        train.setdefault("backend", "compile")
    elif old == "output_dir":
        top.setdefault("output_dir", value)
    # warmup_epochs: a count of epochs has no count of updates to become without the data; only
    # training reads it, and training reads the experiment file, so it is dropped
