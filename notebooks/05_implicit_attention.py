# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 5: implicit attention
#
# Attention weights are one answer to "where did the model look?". There is an older one that
# every differentiable model has, attention or not: how much does the output change when an
# input changes? Graves (2013) called the matrix of those derivatives the *sequential
# Jacobian*; today it is called **gradient saliency**. This lesson puts the two side by side,
# scores both against gold links, and asks the model without attention where *it* looks.
#
# Quick mode (the default) trains two small models (about a minute); `QUICK=0` trains the
# shipped `configs/numbers_bahdanau.yaml` and `configs/numbers_none.yaml`.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import Image, display

import attnkit
from attnkit.data.tasks.gold import gold_aligner
from attnkit.data.tasks.registry import build_split
from attnkit.evaluation.alignment import alignment_metrics
from attnkit.lessons.checks import check
from attnkit.lessons.mode import pick, seed, seeded

torch.set_num_threads(1)
CONFIGS = {info.name: info.path for info in attnkit.configs()}
BUDGET = {
    "data.languages": ["de", "fr"],
    "data.max_number": pick(299, 999),
    "train.epochs": pick(15, 40),
    "train.batch_size": pick(16, 32),
    "train.patience": pick(100, 4),
    "train.max_minutes": pick(2, 8),
    "train.threads": 1,
    "train.progress": False,
    "train.tensorboard": False,
}
SMALL = {  # quick mode: a smaller model, trained faster (the shipped config in full mode)
    "train.lr": 0.003,
    "train.scheduler": "constant",
    "model.embedding_dim": 32,
    "model.encoder_hidden": 64,
    "model.decoder_hidden": 128,
}
models = {}
for name in ("bahdanau", "none"):
    small = dict(SMALL, **({"model.attention_dim": 64} if name != "none" else {}))
    overrides = seeded({**BUDGET, **pick(small, {})})  # SEED=k: train.seed 1000 + k
    run = attnkit.train(
        CONFIGS[f"numbers_{name}"], overrides, output_dir=f"runs/lesson05/{name}", overwrite=True
    )
    models[name] = attnkit.load(run.best)
    print(name, run.metrics)

# %% [markdown]
# ## Saliency: the sequential Jacobian
#
# For output token $y_t$ and the embedding $e_i$ of source token $i$, the saliency is the size
# of the gradient of the output's log-probability:
#
# $$S_{t,i} = \left\lVert \frac{\partial \log p(y_t \mid y_{<t}, x)}{\partial e_i}
#   \right\rVert_2 ,$$
#
# normalised over $i$ so that each row sums to one, like an attention row. captum computes it
# (`method="gradient"`; also `input-x-gradient` and `integrated-gradients`).

# %%
word = "siebenundneunzig"
explained = models["bahdanau"].explain(word)
print(explained.scores)
explained.plot("runs/lesson05/explained.png")  # attention and saliency on shared axes
display(Image("runs/lesson05/explained.png"))

# %% [markdown]
# The same explanation, interactive, with a choice of attention or saliency:

# %%
explained.show()

# %% [markdown]
# ## The model without attention still looks
#
# The fixed-vector decoder of lesson 2 has no weights to draw, but it has gradients. Its
# saliency is a map of the same shape, and nothing stops us from scoring it against the gold
# links like an attention map.

# %%
implicit = models["none"].explain(word)
print(implicit.output, implicit.attention is None)
fig, ax = plt.subplots(figsize=(7, 3))
implicit.plot(ax)
ax.set_title("no attention: gradient saliency")
plt.show()

# %% [markdown]
# ## Scored against the gold links
#
# Every test item, teacher forced on its reference: AER and argmax-in-span of attention and
# saliency, and how often the two maps put their maximum on the same source character. A
# random map gives the floor: its argmax lands in a gold span about as often as the span is
# long.

# %%
count = pick(60, 400)
reports = {
    name: m.explain_report(split="test", count=count, reference=True) for name, m in models.items()
}
aligner = gold_aligner(models["none"].config.data)
test = build_split(models["none"].config.data, "test")[:count]
rng = np.random.default_rng(seed())
random_maps = [  # one row per output character and </s>, one column per source character and </s>
    (rng.dirichlet(np.ones(len(src) + 1), size=len(tgt) + 1), aligner(src, tgt))
    for src, tgt in test
]
rows = {
    "random map": alignment_metrics(random_maps),
    "bahdanau: attention": reports["bahdanau"]["attention"],
    "bahdanau: saliency": reports["bahdanau"]["saliency"],
    "none: saliency": reports["none"]["saliency"],
}
for name, row in rows.items():
    print(f"{name:22} AER {row['aer']:6.2f}   argmax in span {row['argmax_in_span']:6.2f}")
agreement = reports["bahdanau"]["argmax_agreement"]
print(f"bahdanau's attention and saliency agree on the argmax of {agreement}% of the steps")
fig, ax = plt.subplots(figsize=(7, 3))
ax.barh(list(rows), [r["argmax_in_span"] for r in rows.values()])
ax.set_xlabel("argmax in the gold span (%)")
plt.show()

# %% [markdown]
# ## What to look for
#
# * Attention and saliency of the same model agree on the broad picture (which word a digit
#   comes from) but not cell by cell: the attention is what the decoder *read*, the saliency
#   what its output *depends on*, through the attention and through the recurrence.
# * Saliency rows are flatter: a gradient reaches every input through the encoder's
#   recurrence, so no source character gets exactly zero.
# * The model without attention is far above the random floor: it "looks" at the right word
#   for most digits, with no attention at all. Attention is one way to see where a model looks,
#   not a property a model needs to have in order to look.
#
# ## Exercises
#
# 1. Repeat with `method="integrated-gradients"`. Does the saliency move closer to the gold
#    links? It costs 20 to 50 forward passes per map: how much slower is it?
# 2. Find a test item where Bahdanau's attention and saliency disagree on the argmax. Which one
#    is in the gold span?
# 3. Explain a *wrong* output of the model without attention (`model.explain(text)` explains
#    its own output). Where does its saliency go when it gets a digit wrong?

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
assert explained.saliency.shape == explained.attention.shape
assert implicit.attention is None and implicit.saliency.shape[1] == len(implicit.source_tokens)
floor = rows["random map"]["argmax_in_span"]
none_gain = rows["none: saliency"]["argmax_in_span"] - floor
assert check("none: saliency in span - random (points)", none_gain, ">=", 15)  # still looks
bahdanau_gain = rows["bahdanau: saliency"]["argmax_in_span"] - floor
assert check("bahdanau: saliency in span - random (points)", bahdanau_gain, ">=", 20)
# the two maps agree far more often than chance
assert check("argmax agreement (%) against chance", agreement, ">", 100 / len(word))
