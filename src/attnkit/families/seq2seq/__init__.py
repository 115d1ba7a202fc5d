"""Sequence to sequence: an RNN encoder-decoder with any classic attention (or none), or a
Transformer; translation, transliteration, G2P."""

from attnkit.families.base import Family

FAMILY = Family(
    name="seq2seq",
    package=__name__,
    model="model:Seq2SeqModel",
    train="train:train",
    endpoint="endpoint:ENDPOINT",
    public=("model:Seq2SeqModel", "translator:Translation"),
    describe="train:describe",
    ensembles=True,
    own_options={
        "evaluate": ("src", "ref", "tsv", "examples", "data_dir"),
        "explain": ("data_dir",),
        "faithfulness": ("data_dir",),
    },
    scoring="greedy",  # its zoo models' test scores are of greedy decoding
)
