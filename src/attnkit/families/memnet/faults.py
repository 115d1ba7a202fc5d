"""The memory network family's inputs for the hostile-input harness: a tiny MemN2N on a few bAbI
task 1 stories of its own."""

from attnkit.families.fault_inputs import FaultInputs

_PEOPLE, _PLACES = ("Mary", "John", "Sandra"), ("kitchen", "garden", "office")


def _stories(n: int, shift: int) -> str:
    lines = []
    for s in range(n):
        person, place = _PEOPLE[s % 3], _PLACES[(s + shift) % 3]
        other = _PLACES[(s + shift + 1) % 3]
        lines += [f"1 {person} went to the {other}.", f"2 {person} moved to the {place}."]
        lines.append(f"3 Where is {person}? \t{place}\t2")
    return "\n".join(lines) + "\n"


_TRAIN, _TEST = "en/qa1_single-supporting-fact_train.txt", "en/qa1_single-supporting-fact_test.txt"

INPUTS = FaultInputs(
    experiment={
        "family": "memnet",
        "data": {"task": 1, "directory": ".", "memory_size": 4},
        "model": {"hops": 2, "dim": 6},
        "train": {"epochs": 3, "batch_size": 4, "threads": 1, "progress": False},
    },
    files={_TRAIN: _stories(24, 0), _TEST: _stories(6, 1)},
    data_files=(_TRAIN, _TEST),
    resumes=True,
    calls={
        "answer": {"story": ["Mary moved to the kitchen."], "question": "Where is Mary?"},
        "explain": {"story": ["Mary moved to the kitchen."], "question": "Where is Mary?"},
        "evaluate": {"split": "test"},
    },
    commands=(("evaluate", "--model", "{model}"),),
    request={"story": ["Mary moved to the kitchen."], "question": "Where is Mary?"},
)
