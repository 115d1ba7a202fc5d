"""What a family gives the hostile-input harness (``benchmarks/faults.py``, its registry cases):
a :class:`FaultInputs` record in the family's ``faults.py`` (``Family.faults`` names it).

The harness iterates the registry and runs, for every family, the same classes of case: endless
and huge data files (a FIFO, ``/dev/zero``, one endless line in place of each data file), wrong
types through the Python API, crafted checkpoints (a FIFO in place of each of its files, a config
section with a huge size, a safetensors header declaring a huge tensor, another family's weights),
wrong-family requests to the server, and kill -9 / SIGTERM / a full disk with bit-exact resume.
The record says how to make a tiny model of the family and what a valid input looks like; a case
the family cannot have is one the record leaves empty (no ``experiment``: nothing to train, so no
resume cases; a ``checkpoint`` function: data-file cases through its commands; no ``request``:
the server does not answer it). Nothing here imports
torch: the harness lists its cases without loading a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FaultInputs:
    """A family's tiny model and valid inputs, for the harness to break.

    - ``experiment``: a tiny experiment mapping (its ``family:`` included) that trains in
      seconds on one thread; relative paths in it name ``files``. None: the family is not trained
      by ``attnkit train`` (no resume cases).
    - ``files``: file name -> content (text or bytes), written beside the experiment.
    - ``data_files``: the names in ``files`` that training reads (a family with a
      ``checkpoint`` function: that its first command reads, run on its checkpoint beside
      them): each is replaced in turn by a FIFO, a link to ``/dev/zero`` and one endless line.
    - ``checkpoint``: ``"module:function"`` in the family's package, ``function(directory) ->
      model name`` writing a tiny model into ``directory`` (for a family whose training reads
      data the harness does not hold, or none); None: the checkpoint is ``experiment``'s best.
      A family may give both: the cases use the made model, the resume cases train.
    - ``resumes``: a training interrupted (kill -9, SIGTERM, a full disk) and resumed ends with
      the weights of one never interrupted, bit for bit.
    - ``calls``: API method -> valid keyword arguments; the harness gives each argument in turn
      None, a number, a list of None, a huge integer...: each call must answer or raise one
      :class:`~attnkit.errors.AttnkitError` line, never another exception.
    - ``commands``: command lines run on the family's checkpoint (``{model}`` stands for it).
    - ``request``: a valid JSON body for the family's server endpoint (None: no endpoint).
    """

    experiment: Mapping[str, Any] | None = None
    files: Mapping[str, str | bytes] = field(default_factory=dict)
    data_files: tuple[str, ...] = ()
    checkpoint: str | None = None
    resumes: bool = False
    calls: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    commands: tuple[tuple[str, ...], ...] = ()
    request: Mapping[str, Any] | None = None

    def __post_init__(self):
        missing = [name for name in self.data_files if name not in self.files]
        if missing:
            raise ValueError(f"data_files {missing} are not among files")
        if self.data_files and self.checkpoint is not None and not self.commands:
            raise ValueError("data_files of a made checkpoint need a command that reads them")
        if self.experiment is None and self.checkpoint is None:
            raise ValueError("give an experiment to train or a checkpoint function")
