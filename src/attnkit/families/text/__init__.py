"""Attention over a sentence's words: a classifier that pools its encoder's states by attention
(or by their mean, for contrast), on SST or label<TAB>text files of your own."""

from attnkit.families.base import Family

FAMILY = Family(
    name="text",
    package=__name__,
    model="model:TextModel",
    train="train:train",
    endpoint="endpoint:ENDPOINT",
    public=("model:TextModel", "results:TextClassification"),
    own_options={name: ("data_dir",) for name in ("evaluate", "explain", "faithfulness")},
)
