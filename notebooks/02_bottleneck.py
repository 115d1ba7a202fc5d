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
# # Lesson 2: the bottleneck
#
# The first neural translators (Cho et al. 2014, Sutskever et al. 2014) read the whole source
# into one vector and wrote the translation from it. Bahdanau et al. (2015) noticed that their
# quality fell with the length of the sentence, and blamed the vector: however long the source,
# everything the decoder needs must squeeze through a fixed number of numbers. Their fix was
# attention: let the decoder look back at every encoder state. This lesson trains both on the
# same data and draws the curve that made the case, accuracy by source length.
#
# Quick mode (the default) trains two small models in about a minute; `QUICK=0` trains longer
# on more data.

# %%
import matplotlib.pyplot as plt
import torch

import attnkit
from attnkit.lessons import sequences
from attnkit.lessons.checks import check
from attnkit.lessons.mode import pick, seed, train_seed

torch.set_num_threads(1)
MAX_LEN = 16
splits = sequences.digit_splits(pick(3000, 20000), 200, 400, max_len=MAX_LEN, seed=seed())
paths = sequences.write_splits(splits, "runs/lesson02/data")
for source, target in splits.test[:4]:
    print(f"{source:60} -> {target}")

# %% [markdown]
# ## The task and the two models
#
# Spelled-out digits to digits, 1 to 16 of them: *"seven three nine one"* $\to$ *"7 3 9 1"*.
# Trivial for a person, and exactly what a fixed vector finds hard, because every source word
# carries information the output needs (about 3.3 bits), so what must pass from encoder to
# decoder grows with the source.
#
# **Without attention**, the decoder reads the same context $c$, the encoder's final state,
# at every step; **with attention**, it reads a context $c_t$ of its own, with Bahdanau's
# additive weights:
#
# $$s_t = f(s_{t-1}, y_{t-1}, c) \qquad \text{against} \qquad
#   s_t = f(s_{t-1}, y_{t-1}, c_t), \quad c_t = \sum_i \alpha_{t,i} h_i, \quad
#   \alpha_{t,i} = \mathrm{softmax}_i\, v^\top \tanh(W s_{t-1} + U h_i)$$
#
# Everything else is the same: sizes, data, updates.

# %%
runs = {}
for attention in ("none", "bahdanau"):
    config = {
        "name": f"lesson02-{attention}",
        "data": {
            "task": "parallel",
            **paths,
            "src_level": "word",
            "tgt_level": "word",
            "metric": "exact",
        },
        "model": {
            "attention": attention,
            "embedding_dim": 16,
            "encoder_hidden": 32,
            "decoder_hidden": 64,
            "dropout": 0.0,
            **({} if attention == "none" else {"attention_dim": 32}),
        },
        "train": {
            "epochs": pick(8, 20),
            "batch_size": 32,
            "lr": 0.003,
            "scheduler": "constant",
            "patience": 100,  # no early stopping: both get the same updates
            "max_minutes": pick(3, 15),
            "threads": 1,
            "progress": False,
            "tensorboard": False,
            "seed": train_seed(1),  # 1, the default, unless SEED is set
        },
    }
    runs[attention] = attnkit.train(config, output_dir=f"runs/lesson02/{attention}", overwrite=True)
    print(attention, runs[attention].metrics)
fig, ax = plt.subplots(figsize=(6, 3))
for attention, run in runs.items():
    dev = [r for r in run.history if r["kind"] == "dev"]
    ax.plot(
        [r["update"] for r in dev], [r["dev"]["exact_match"] for r in dev], "o-", label=attention
    )
ax.set_xlabel("update")
ax.set_ylabel("dev exact match (%)")
ax.set_title("the same data and updates; only the decoder differs")
ax.legend()
plt.show()

# %% [markdown]
# ## The length curve

# %%
EDGES = [1, 5, 9, 13]
sources = [s for s, _ in splits.test]
curves, models = {}, {}
for attention, run in runs.items():
    models[attention] = attnkit.load(run.best)
    outputs = [t.output for t in models[attention].translate(sources)]
    curves[attention] = sequences.accuracy_by_length(outputs, splits.test, EDGES)
fig, ax = plt.subplots(figsize=(6, 3.5))
for attention, rows in curves.items():
    ax.plot([r["lengths"] for r in rows], [r["exact"] for r in rows], "o-", label=attention)
ax.set_xlabel("source length (words)")
ax.set_ylabel("test exact match (%)")
ax.legend()
plt.show()

# %% [markdown]
# ## Where the attention model looks
#
# The fixed-vector model has no map to show; the attention model's is a diagonal band: to
# write the $k$-th digit it reads the $k$-th word, however long the source (its weights are
# scored with the previous state $s_{t-1}$, so the strongest may sit one word early or late).

# %%
long_source = max(sources, key=lambda s: len(s.split()))
(t,) = models["bahdanau"].translate(long_source)
t.show()

# %% [markdown]
# ## What to look for
#
# * On short sources both models are near perfect: one vector is plenty for four digits.
# * The fixed-vector curve falls off a cliff as the source grows; the attention curve stays
#   flat. The gap on the longest bucket is the whole argument of Bahdanau et al.'s Figure 2.
# * The attention map is a diagonal band: the model re-reads the source word it needs, so
#   nothing has to be remembered for long.
#
# ## Exercises
#
# 1. Double the fixed-vector model's `decoder_hidden` (and `encoder_hidden`). How far does the
#    cliff move? Does it go away?
# 2. Reverse the targets (`"7 3 9 1"` for `"one nine three seven"`). Sutskever et al. reversed
#    the *source* to help the fixed vector: try both with and without attention.
# 3. `attnkit explain` (or `model.explain(text)`) draws the gradient saliency of the model
#    without attention. Where does it "look"? (Lesson 5 takes this up.)

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
none_long, attention_long = curves["none"][-1]["exact"], curves["bahdanau"][-1]["exact"]
# attention beats the fixed vector on long sources
assert check("longest bucket: attention - none (points)", attention_long - none_long, ">=", 30)
# the fixed vector runs out as sources grow
assert check(
    "none: shortest - longest bucket (points)", curves["none"][0]["exact"] - none_long, ">", 0
)
# attention stays up (its worst bucket: 82.4-98.3% over SEED 0-2)
assert check("attention: worst bucket (%)", min(r["exact"] for r in curves["bahdanau"]), ">=", 70)
best = t.weights[:-1, :-1].argmax(-1)  # rows and columns of the words, </s> left out
near = abs(best - torch.arange(len(best)).numpy()) <= 1  # digit k reads word k, or a neighbour
assert check("argmax within a word of the diagonal (share)", near.mean(), ">=", 0.8)
