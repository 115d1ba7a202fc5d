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
# # Lesson 3: score functions side by side
#
# Lesson 1 scored a query against a key by distance. A translator's decoder scores its state
# against every encoder state, and the classic papers disagree on how. Bahdanau et al. (2015)
# use a small network queried with the *previous* decoder state; Luong et al. (2015) compare
# the *current* state with a dot product, a bilinear form or a network; Vaswani et al. (2017)
# scale the dot product and split it into heads. Here all six learn the same task, German and
# French number words to digits, and we compare their maps on shared axes, measure them against
# gold alignments, and see which are sharp and which diffuse.
#
# Quick mode (the default) trains six small models on numbers below 300 (about a minute in
# all); `QUICK=0` trains the shipped `configs/numbers_*.yaml` on both languages up to 999.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

import attnkit
from attnkit.lessons.checks import check
from attnkit.lessons.mode import pick, seeded

torch.set_num_threads(1)
CONFIGS = {info.name: info.path for info in attnkit.configs()}
SCORES = ["bahdanau", "luong_concat", "luong_dot", "luong_general", "scaled_dot", "multihead"]
BUDGET = {
    "data.languages": ["de", "fr"],
    "data.max_number": pick(299, 999),
    "train.epochs": pick(15, 40),
    "train.batch_size": pick(16, 32),
    "train.max_minutes": pick(2, 8),
    "train.patience": pick(100, 4),  # quick mode: every model gets all its epochs
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
    "model.attention_dim": 64,
}

# %% [markdown]
# ## Six ways to score
#
# With $s$ the decoder state that queries, $h_i$ the encoder state of source position $i$ and
# $d$ their width:
#
# | name | score $a(s, h_i)$ | queried with |
# |---|---|---|
# | Bahdanau (additive) | $v^\top \tanh(W s_{t-1} + U h_i)$ | previous state $s_{t-1}$ |
# | Luong concat | $v^\top \tanh(W [h_t; h_i])$ | current state $h_t$ |
# | Luong dot | $h_t^\top h_i$ | current state |
# | Luong general | $h_t^\top W h_i$ | current state |
# | scaled dot-product | $q^\top k_i / \sqrt{d}$, $q = W_q h_t$, $k_i = W_k h_i$ | current state |
# | multi-head | the scaled dot-product in $H$ subspaces, averaged | current state |
#
# Each turns its scores into weights with the softmax of lesson 1.

# %%
models = {}
for name in SCORES:
    overrides = seeded({**BUDGET, **pick(SMALL, {})})  # SEED=k: train.seed 1000 + k
    run = attnkit.train(
        CONFIGS[f"numbers_{name}"], overrides, output_dir=f"runs/lesson03/{name}", overwrite=True
    )
    models[name] = attnkit.load(run.best)
    print(f"{name:14} dev {run.metrics}")

# %% [markdown]
# ## Their maps on shared axes
#
# The same input for all six: *"siebenundneunzig"* (97) names the units before the tens, so a
# good alignment jumps from the end of the word back to its start. Gold links are outlined.

# %%
word = "siebenundneunzig"
shown = {name: m.translate(word)[0] for name, m in models.items()}
fig, axes = plt.subplots(2, 3, figsize=(16, 6), sharex=True, sharey=True)
for ax, (name, t) in zip(axes.flat, shown.items()):
    t.plot(ax)
    ax.set_title(f"{name}: {t.output}")
fig.tight_layout()
plt.show()

# %% [markdown]
# Any one of them opens interactively: hover over a cell to read its weight.

# %%
shown["luong_general"].show()

# %% [markdown]
# ## Measured against the gold links
#
# For every test item, teacher forced on the reference: **AER** (lesson 4 gives the formula;
# lower is better), **argmax in span** (the share of output digits whose most attended
# character is one of the characters that name it), and the **normalised entropy** of each row
# ($-\sum_i \alpha_i \log \alpha_i / \log S$: 0 is all weight on one character, 1 uniform).

# %%
table = {}
for name, m in models.items():
    scores = m.evaluate(split="test", beam=1)
    forced = scores["alignment"]["teacher_forced"]
    table[name] = {
        "exact": scores["greedy"]["exact_match"],
        "aer": forced["aer"],
        "in_span": forced["argmax_in_span"],
        "entropy": forced["entropy_normalised"],
    }
    print(f"{name:14} {table[name]}")
fig, axes = plt.subplots(1, 2, figsize=(11, 3))
names = list(table)
axes[0].bar(names, [table[n]["aer"] for n in names])
axes[0].set_title("test AER (%), lower is better")
axes[1].bar(names, [table[n]["entropy"] for n in names], color="tab:orange")
axes[1].set_title("attention entropy (0 sharp .. 1 uniform)")
for ax in axes:
    ax.tick_params(axis="x", rotation=45)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## What to look for
#
# * The dot-product family (Luong dot and general) is **sharp**: nearly one bright cell per
#   row. Its scores are unbounded inner products, so the softmax saturates. The additive scores
#   (Bahdanau, concat) pass through $\tanh$ and a fixed $v$: bounded, so their maps stay
#   **diffuse** over the characters of a word.
# * Sharp is not the same as right: compare AER with entropy. A diffuse map can still put its
#   maximum in the right word.
# * Bahdanau queries with $s_{t-1}$, the state *before* the digit is written; its bright cells
#   often sit on the word the digit comes from, sometimes one step early.
#
# ## Exercises
#
# 1. Train `numbers_luong_dot` with `model.input_feeding: false`. Does its AER change?
# 2. Translate a French number such as *"quatre-vingt-dix-sept"* with each model. Which
#    attends to *quatre-vingt* for the 9, and which to *dix*?
# 3. The scaled dot-product divides by $\sqrt{d}$. Write the entropy of a softmax over scores of
#    variance $d$ and explain why the division keeps the map from saturating as $d$ grows.

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
for name, t in shown.items():
    assert np.allclose(t.weights.sum(-1), 1.0, atol=1e-4), name  # each row a distribution
sharp = max(table[n]["entropy"] for n in ("luong_dot", "luong_general"))
diffuse = min(table[n]["entropy"] for n in ("bahdanau", "luong_concat"))
# dot-product scores are sharper than additive ones
assert check("entropy: most diffuse dot - sharpest additive", sharp - diffuse, "<", 0)
worst_aer = max(row["aer"] for row in table.values())
assert check("worst AER of the six (%)", worst_aer, "<", 50.0)  # every score learns to align
