"""Pretrained Transformers through Hugging Face transformers (``pip install attnkit[hf]``):
``attnkit.load("hf:<local directory or model id>")`` opens a BERT-style encoder or classifier, a
decoder-only language model (GPT-2, Llama), an encoder-decoder (Marian, T5, BART) or a ViT, offline
first, running SDPA attention, its every layer and head recovered by ``attnkit.capture``."""

from attnkit.families.base import Family

FAMILY = Family(
    name="hf",
    package=__name__,
    model="model:PretrainedModel",
    train="train:train",
    endpoint="endpoint:ENDPOINT",
    scheme="hf",
    own_options={"faithfulness": ("data",), "evaluate": ("gold",), "explain": ("heads", "sort")},
    public=("model:PretrainedModel", "results:PretrainedResult"),
)
