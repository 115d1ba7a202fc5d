"""The speech family's inputs for the hostile-input harness: an untrained tiny LAS checkpoint
(training speaks its data with eSpeak, which the harness does not need)."""

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


INPUTS = FaultInputs(
    checkpoint="faults:tiny_checkpoint",
    calls={"transcribe": {"audio": [0.0] * 1600}},
)
