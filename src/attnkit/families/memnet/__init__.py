"""Attention over a memory: end-to-end memory networks (MemN2N) answering bAbI questions
in several hops."""

from attnkit.families.base import Family

FAMILY = Family(
    name="memnet",
    package=__name__,
    model="model:MemoryModel",
    train="train:train",
    endpoint="endpoint:ENDPOINT",
    public=("model:MemoryModel", "model:Answer"),
    describe="config:describe",
    own_options={"evaluate": ("stories", "data_dir"), "explain": ("data_dir",)},
)
