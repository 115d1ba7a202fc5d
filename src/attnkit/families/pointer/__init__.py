"""Attention over the input as the output: pointer networks (convex hull, TSP, sorting)."""

from attnkit.families.base import Family

FAMILY = Family(
    name="pointer",
    package=__name__,
    model="model:PointerModel",
    train="train:train",
    endpoint="endpoint:ENDPOINT",
    public=("model:PointerModel", "model:PointerSolution"),
    describe="config:describe",
    scoring="greedy",  # its zoo models' test scores are of greedy decoding
)
