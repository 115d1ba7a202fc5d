"""The speech family's inputs for the hostile-input harness: an untrained tiny LAS checkpoint for
the cases that break its inputs, and a tiny run (21 numbers spoken by eSpeak into the case's own
audio cache, 3 epochs) for the kill -9 / SIGTERM / full-disk resume cases."""

import io
import math
import struct
import wave
from pathlib import Path

from attnkit.families.fault_inputs import FaultInputs

CONFIG = {
    "family": "speech",
    "data": {"languages": ["en"], "max_number": 20},
    "model": {"listener_hidden": 8, "speller_hidden": 8, "attention_dim": 8, "embedding": 4},
}


def tiny_checkpoint(directory: Path) -> str:
    """An untrained tiny speech checkpoint in ``directory``; its path."""
    from attnkit.families.speech.bundle import build_model
    from attnkit.families.speech.config import parse_config
    from attnkit.training import resumable
    from attnkit.training.state import TrainerState

    cfg = parse_config(CONFIG)
    model = build_model(cfg)
    resumable.save_checkpoint(Path(directory), "speech", model, cfg.to_dict(), TrainerState(), None)
    return str(directory)


def _wav(seconds: float = 0.2, rate: int = 22_050) -> bytes:
    """A 440 Hz tone, mono 16-bit, at the task's rate (made with the standard library)."""
    n = int(seconds * rate)
    tone = [int(3000 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(n)]
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(struct.pack(f"<{n}h", *tone))
    return buffer.getvalue()


#: three epochs of a few spoken numbers, in the case's folder (its audio cache too)
EXPERIMENT = {
    **CONFIG,
    "data": {**CONFIG["data"], "n_mels": 8, "directory": "audio"},
    "train": {"epochs": 3, "batch_size": 4, "eval_batch_size": 8, "threads": 1,
              "progress": False, "verbose": False, "tensorboard": False, "patience": None},
}  # fmt: skip

INPUTS = FaultInputs(
    experiment=EXPERIMENT,
    resumes=True,
    checkpoint="faults:tiny_checkpoint",
    files={"heard.wav": _wav()},
    data_files=("heard.wav",),
    calls={"transcribe": {"audio": [0.0] * 1600}},
    commands=(("plot", "--model", "{model}", "heard.wav", "-o", "heard.png"),),
)
