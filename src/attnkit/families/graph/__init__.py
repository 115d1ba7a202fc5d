"""Attention over graphs: GAT and GATv2 (and GCN, const-GAT for contrast) on Cora-style
node classification and DictionaryLookup."""

from attnkit.families.base import Family

FAMILY = Family(
    name="graph",
    package=__name__,
    model="model:GraphModel",
    train="train:train",
    endpoint="endpoint:ENDPOINT",
    public=("model:GraphModel", "model:NodeExplanation"),
    describe="config:describe",
)
