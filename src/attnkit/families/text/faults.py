"""The text family's inputs for the hostile-input harness: a tiny sentence classifier."""

from attnkit.families.fault_inputs import FaultInputs

_ROWS = ["pos\tgood film", "neg\tbad film", "pos\ta good plot", "neg\ta bad plot"]

INPUTS = FaultInputs(
    experiment={
        "family": "text",
        "data": {"task": "tsv", "train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        "model": {"embedding_dim": 8, "hidden": 8, "dropout": 0.0},
        "train": {"epochs": 3, "batch_size": 4, "threads": 1, "progress": False},
    },
    files={
        "train.tsv": "\n".join(_ROWS * 4) + "\n",
        "dev.tsv": "\n".join(_ROWS) + "\n",
        "test.tsv": "\n".join(_ROWS) + "\n",
    },
    data_files=("train.tsv", "dev.tsv", "test.tsv"),
    resumes=True,
    calls={
        "classify": {"text": "good film"},
        "explain": {"text": "good film", "method": "gradient"},
        "evaluate": {"split": "dev"},
    },
    commands=(("plot", "--model", "{model}", "good film", "-o", "x.png"),),
    request={"inputs": ["good film"]},
)
