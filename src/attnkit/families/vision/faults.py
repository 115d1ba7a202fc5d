"""The vision family's inputs for the hostile-input harness: a copy of the zoo's MNIST RAM model
(training reads MNIST, which the harness does not need)."""

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


INPUTS = FaultInputs(
    checkpoint="faults:tiny_checkpoint",
    files={"digit.png": _png()},
    data_files=("digit.png",),
    calls={"classify": {"image": np.zeros((28, 28), dtype=np.float32)}},
    commands=(("plot", "--model", "{model}", "--image", "digit.png", "-o", "glimpses.png"),),
    request={"index": 0},
)
