"""The pointer family's inputs for the hostile-input harness: a tiny sorting pointer network."""

from attnkit.families.fault_inputs import FaultInputs

INPUTS = FaultInputs(
    experiment={
        "family": "pointer",
        "data": {"task": "sort", "points": 4, "train_size": 64, "dev_size": 8, "test_size": 8},
        "model": {"hidden": 8, "attention_dim": 8},
        "train": {"epochs": 3, "batch_size": 8, "threads": 1, "progress": False},
    },
    resumes=True,
    calls={
        "solve": {"points": [[0.3], [0.1], [0.2]], "beam": 1},
        "evaluate": {"split": "dev", "beam": 1},
    },
    commands=(("evaluate", "--model", "{model}"),),
    request={"points": [[0.3], [0.1], [0.2]]},
)
