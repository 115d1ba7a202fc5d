"""The vision family's inputs for the hostile-input harness: a copy of the zoo's MNIST RAM model
for the cases that break its inputs, and a tiny attention-pooling run (64 MNIST digits from
``$ATTNKIT_DATA_DIR/mnist``, 3 epochs) for the kill -9 / SIGTERM / full-disk resume cases."""

import shutil
import struct
import zlib
from pathlib import Path

import numpy as np

from attnkit.families.fault_inputs import FaultInputs


def tiny_checkpoint(directory: Path) -> str:
    """The zoo's ``mnist-ram`` checkpoint copied into ``directory``; its path."""
    from attnkit.zoo import resolve

    shutil.copytree(resolve("zoo:mnist-ram"), directory, dirs_exist_ok=True)
    return str(directory)


def _png(side: int = 28) -> bytes:
    """A black 8-bit grey ``side`` x ``side`` PNG (made with the standard library)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    rows = b"".join(b"\0" + bytes(side) for _ in range(side))  # filter 0, then the row
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


#: three epochs of 64 digits, 16 held out, through a 2-layer convolution pooled by attention
EXPERIMENT = {
    "family": "vision",
    "data": {"task": "mnist", "verify": False, "train_size": 64, "dev_size": 16,
             "test_size": 16},
    "model": {"type": "attention_pooling", "channels": [4, 8], "attention_hidden": 4},
    "train": {"epochs": 3, "batch_size": 16, "eval_batch_size": 16, "threads": 1,
              "progress": False, "verbose": False, "tensorboard": False, "patience": None},
}  # fmt: skip

INPUTS = FaultInputs(
    experiment=EXPERIMENT,
    resumes=True,
    checkpoint="faults:tiny_checkpoint",
    files={"digit.png": _png()},
    data_files=("digit.png",),
    calls={"classify": {"image": np.zeros((28, 28), dtype=np.float32)}},
    commands=(("plot", "--model", "{model}", "--image", "digit.png", "-o", "glimpses.png"),),
    request={"index": 0},
)
