"""The seq2seq family's inputs for the hostile-input harness: a tiny reversal translator."""

from attnkit.families.fault_inputs import FaultInputs

_PAIRS = ["abc\tcba", "ab\tba", "bca\tacb", "cab\tbac", "aab\tbaa", "cc\tcc", "bac\tcab", "a\ta"]

INPUTS = FaultInputs(
    experiment={
        "family": "seq2seq",
        "name": "tiny",
        "data": {"task": "parallel", "train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        "model": {
            "attention": "bahdanau",
            "embedding_dim": 8,
            "encoder_hidden": 8,
            "decoder_hidden": 16,
            "attention_dim": 8,
            "dropout": 0.0,
        },
        "train": {"epochs": 3, "batch_size": 4, "threads": 1, "progress": False, "lr": 0.01},
        "decode": {"beam_size": 2, "max_len_cap": 8},
    },
    files={
        "train.tsv": "\n".join(_PAIRS * 4) + "\n",
        "dev.tsv": "\n".join(_PAIRS[:4]) + "\n",
        "test.tsv": "\n".join(_PAIRS[4:]) + "\n",
    },
    data_files=("train.tsv", "dev.tsv", "test.tsv"),
    resumes=True,
    calls={
        "translate": {"texts": "abc", "beam": 2, "top_k": 2},
        "explain": {"text": "abc", "method": "gradient"},
        "evaluate": {"split": "dev", "beam": 1, "data_dir": "."},  # the files, where it runs
    },
    commands=(("translate", "--model", "{model}", "abc"),),
    request={"inputs": ["abc"], "beam": 2},
)
