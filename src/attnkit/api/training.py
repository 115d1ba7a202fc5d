"""Train from Python, and the configs that ship with attnkit.

``attnkit.train`` is what ``attnkit train`` runs: the same run-directory rules (a fresh run
refuses a directory holding checkpoints unless ``overwrite``), the same lock and the same
``resume``::

    run = attnkit.train("configs/numbers_bahdanau.yaml", overrides={"train.epochs": 3},
                        output_dir="runs/numbers")
    run.best, run.metrics            # runs/numbers/best, the last dev scores
    run.load().translate("dreiundzwanzig")[0].show()
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from attnkit.config import read_yaml
from attnkit.errors import ConfigError
from attnkit.families import DEFAULT_FAMILY, TrainRequest, family_of

#: where the shipped configs are: an installed attnkit's own copy (the wheel's build puts
#: ``configs/`` there, see setup.py), else the ``configs/`` of attnkit's source checkout
PACKAGED_CONFIGS = Path(__file__).resolve().parents[1] / "configs"
CHECKOUT_CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def shipped_configs_dir() -> Path:
    """The directory of the configs that ship with attnkit (installed copy first)."""
    return PACKAGED_CONFIGS if PACKAGED_CONFIGS.is_dir() else CHECKOUT_CONFIGS


@dataclass(frozen=True)
class ConfigInfo:
    """One shipped experiment config: its name (``numbers_bahdanau``), file, family, task, what
    model it trains, and its first comment line."""

    name: str
    path: Path
    family: str
    task: str
    model: str
    about: str


def configs(directory: str | Path | None = None) -> list[ConfigInfo]:
    """The experiment configs in ``directory`` (default: the configs that ship with attnkit, in
    an installed package or a source checkout's ``configs/``), sorted by name;
    ``attnkit.train(info.path)`` trains one."""
    folder = Path(directory) if directory is not None else shipped_configs_dir()
    if not folder.is_dir():
        raise ConfigError(f"{folder}: no configs directory")
    found = []
    for path in sorted(folder.glob("*.yaml")):
        data = read_yaml(path)
        name = data.get("family", DEFAULT_FAMILY)
        family = family_of(name, f"{path}: family")
        summary = family.summary(data)
        first = next(
            (line.lstrip("# ").strip() for line in path.read_text("utf-8").splitlines()), ""
        )
        found.append(ConfigInfo(path.stem, path, family.name, summary.task, summary.model, first))
    return found


@dataclass(frozen=True)
class Run:
    """A finished (or stopped) training run: its directory and best checkpoint."""

    directory: Path
    best: Path

    @property
    def last(self) -> Path:
        return self.directory / "last"

    @property
    def averaged(self) -> Path | None:
        """``averaged`` (``train.average_checkpoints``): the best on dev of the best checkpoint
        and the means of the N best evaluations; None where the run wrote none."""
        path = self.directory / "averaged"
        return path if (path / "meta.json").is_file() else None

    @property
    def history(self) -> list[dict[str, Any]]:
        """Every line of ``metrics.jsonl`` (train and dev records, in order); empty where the
        run wrote none (a run of an older attnkit, of a family other than seq2seq)."""
        path = self.directory / "metrics.jsonl"
        if not path.is_file():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    @property
    def metrics(self) -> dict[str, Any]:
        """The last dev evaluation's scores (from ``metrics.jsonl``), or, for a run written
        without one, the best checkpoint's recorded score (from its trainer state)."""
        dev = [r["dev"] for r in self.history if r.get("kind") == "dev"]
        if dev:
            return dev[-1]
        state = self.best / "trainer.json"
        if state.is_file():
            saved = json.loads(state.read_text(encoding="utf-8"))
            counters = saved.get("state", saved)  # today's layout, or an older run's flat one
            return {k: v for k, v in counters.items() if "dev" in k or "best" in k}
        return {}

    def load(self, device: str = "auto"):
        """The best checkpoint as a model (:func:`attnkit.load`)."""
        from attnkit.api.loading import load

        return load(self.best, device)


def _override_lines(overrides: Mapping[str, Any] | Sequence[str] | None) -> list[str]:
    """``{"train.lr": 3e-4}`` (or ``["train.lr=3e-4"]``) as the ``--set`` strings of the CLI."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        lines = []
        for key, value in overrides.items():
            text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
            lines.append(f"{key}={text.removesuffix('...').strip()}")
        return lines
    if isinstance(overrides, str):
        raise ConfigError("overrides: give a mapping {key: value} or a list of 'key=value'")
    return [str(line) for line in overrides]


def train(
    config: str | Path | Mapping[str, Any],
    overrides: Mapping[str, Any] | Sequence[str] | None = None,
    output_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
) -> Run:
    """Train the experiment of ``config`` (a YAML file, or the same as a mapping) with
    ``overrides`` (``{"section.key": value}``, as ``--set``) into ``output_dir`` (default: the
    config's ``output_dir``, else ``runs/<name>``). ``resume`` continues from ``last/``;
    ``overwrite`` lets a fresh run replace the checkpoints of an earlier one. Returns the
    :class:`Run`."""
    if isinstance(config, Mapping):
        data, source = copy.deepcopy(dict(config)), Path("attnkit.train(config)")
    else:
        source = Path(config)
        data = read_yaml(source)
    request = TrainRequest(
        config=source,
        overrides=_override_lines(overrides),
        output_dir=None if output_dir is None else Path(output_dir),
        resume=resume,
        overwrite=overwrite,
    )
    family = family_of(data.get("family", DEFAULT_FAMILY), f"{source}: family")
    best = Path(family.resolve(family.train)(data, request))
    return Run(best.parent, best)
