"""The vision family's inputs for the hostile-input harness: a copy of the zoo's MNIST RAM model
(training reads MNIST, which the harness does not need)."""

import shutil
from pathlib import Path

import numpy as np

from attnkit.families.fault_inputs import FaultInputs


def tiny_checkpoint(directory: Path) -> str:
    """The zoo's ``mnist-ram`` checkpoint copied into ``directory``; its path."""
    from attnkit.zoo import resolve

    shutil.copytree(resolve("zoo:mnist-ram"), directory, dirs_exist_ok=True)
    return str(directory)


INPUTS = FaultInputs(
    checkpoint="faults:tiny_checkpoint",
    calls={"classify": {"image": np.zeros((28, 28), dtype=np.float32)}},
    request={"index": 0},
)
