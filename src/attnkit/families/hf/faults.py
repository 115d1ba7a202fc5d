"""The pretrained family's inputs for the hostile-input harness: a tiny BERT classifier built from
a config (random weights, nothing downloaded)."""

from pathlib import Path

from attnkit.families.fault_inputs import FaultInputs


def tiny_checkpoint(directory: Path) -> str:
    """A tiny BERT sentence classifier saved in ``directory``; its ``hf:`` name."""
    from attnkit.families.hf.tiny import save_tiny

    return f"hf:{save_tiny('bert', directory)}"


INPUTS = FaultInputs(
    checkpoint="faults:tiny_checkpoint",
    calls={
        "classify": {"inputs": "the cat sat"},
        "explain": {"inputs": "the cat sat", "steps": 2},
    },
    request={"text": "the cat sat"},
)
