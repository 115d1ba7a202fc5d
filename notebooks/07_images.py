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
# # Lesson 7: looking at images
#
# *Needs MNIST*: attnkit reads it from `$ATTNKIT_DATA_DIR/mnist` or its cache, and downloads it
# (11 MB) where it is missing.
#
# A convolutional network turns an image into a grid of feature vectors, one per region. That
# grid is a set of keys and values like the encoder states of a sentence, so everything of
# lessons 1 to 6 applies: score each region, softmax, average. This lesson trains two models
# that do so: a classifier that pools its features with one learnt attention mask (a $1 \times
# 1$ convolution scores every region), and a reader (Show, Attend and Tell; Xu et al. 2015)
# that writes the digits of a strip one by one, attending somewhere else at every step.
#
# Quick mode (the default) trains both small, on a few thousand images (about a minute);
# `QUICK=0` trains the shipped `configs/attnpool_cluttered60.yaml` and
# `configs/sat_multidigit.yaml`.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import Image, display

import attnkit
from attnkit.lessons.checks import check
from attnkit.lessons.mode import pick, seed, seeded

torch.manual_seed(seed())  # 0 unless the environment variable SEED says otherwise
torch.set_num_threads(1)
CONFIGS = {info.name: info.path for info in attnkit.configs()}
TRAIN = seeded(
    {  # SEED=k: train.seed 1000 + k
        "train.max_minutes": pick(5, 8),
        "train.fit_schedule_to_budget": pick(False, True),  # quick: the data decide, not the clock
        "train.threads": 1,
        "train.progress": False,
        "train.verbose": False,
        "train.tensorboard": False,
    }
)

# %% [markdown]
# ## Attention pooling: a learnt mask over CNN features
#
# The CNN gives features $f_r \in \mathbb{R}^C$ at regions $r = 1..R$ (a $7 \times 7$ grid of
# a $60 \times 60$ image). A $1 \times 1$ convolution scores each region, a softmax over the
# grid turns the scores into a mask, and the classifier reads the masked average:
#
# $$e_r = w^\top \tanh(W f_r), \qquad \alpha_r = \frac{\exp e_r}{\sum_{r'} \exp e_{r'}},
#   \qquad z = \sum_r \alpha_r f_r .$$
#
# On cluttered digits (a digit somewhere on the canvas, pieces of other digits around it) the
# mask must find the digit before the classifier can read it.

# %%
QUICK_POOL = {
    "data.train_size": 4000,
    "data.dev_size": 500,
    "data.test_size": 500,
    "data.clutter_pieces": 2,
    "model.channels": [8, 16, 32],
    "model.attention_hidden": 16,
    "train.epochs": 4,
    "train.batch_size": 64,
    "train.patience": None,
}
run = attnkit.train(
    CONFIGS["attnpool_cluttered60"],
    {**pick(QUICK_POOL, {}), **TRAIN},
    output_dir="runs/lesson07/pool",
    overwrite=True,
)
pool = attnkit.load(run.best)
pool_scores = pool.evaluate(split="test")
print(pool_scores)
fig, axes = plt.subplots(1, 4, figsize=(12, 3))
examples = [pool.classify(i) for i in range(4)]
for ax, c in zip(axes, examples):
    c.plot(ax)
    ax.set_title(f"pred {c.prediction} (true {c.label})")
plt.show()

# %% [markdown]
# One of them interactively (hover to read the mask's weight of a region):

# %%
examples[0].show()

# %% [markdown]
# ## A reader that attends somewhere else at every step
#
# The reader's LSTM decoder is the translator of lesson 4 with an image for a source: at step
# $t$ it scores every region with its state $h_{t-1}$ (Bahdanau's additive score), reads the
# weighted average, and writes the next digit of the strip.

# %%
QUICK_READER = {
    "data.train_size": 4000,
    "data.dev_size": 500,
    "data.test_size": 500,
    "data.max_digits": 3,
    "model.channels": [8, 16, 32],
    "model.hidden": 64,
    "model.attention_dim": 32,
    "train.epochs": 4,
    "train.batch_size": 64,
    "train.patience": None,
}
run = attnkit.train(
    CONFIGS["sat_multidigit"],
    {**pick(QUICK_READER, {}), **TRAIN},
    output_dir="runs/lesson07/reader",
    overwrite=True,
)
reader = attnkit.load(run.best)
reader_scores = reader.evaluate(split="test")
print(reader_scores)
strip = reader.classify(0)
print(strip.prediction, strip.label)
strip.plot("runs/lesson07/strip.png")  # every step's map over the strip
display(Image("runs/lesson07/strip.png"))
strip.show()

# %% [markdown]
# ## What to look for
#
# * The pooling mask is bright where there is ink and dark on the empty canvas; the better the
#   model, the more of it sits on the digit rather than on the clutter.
# * The reader's maps move from left to right, one digit per step, and its last step (the end
#   of the string) looks anywhere.
# * Both are soft: every region gets some weight, and the gradient reaches every region. Lesson
#   8 makes the choice hard.
#
# ## Exercises
#
# 1. Train the pooling classifier with `model.attention_hidden: null` (one linear $1 \times 1$
#    convolution for a scorer). Does the mask still find the digit?
# 2. Give the reader strips of up to 5 digits (`data.max_digits: 5`). Where does it look on
#    the strips it gets wrong?
# 3. `pool.draw(3, "explained.png", explain=True)` draws the mask beside the gradient saliency
#    and Grad-CAM of the same answer. Do they agree on where the digit is?

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)


# %%
def mass_on_digit(c) -> float:
    """Share of the attention mask on the quarter of the regions with the most ink (a uniform
    mask puts about a quarter there). By rank: most regions of a canvas hold no ink at all."""
    (mask,) = c.attention
    h, w = c.image.shape
    rows, cols = mask.shape
    cells = c.image[: rows * (h // rows), : cols * (w // cols)]
    ink = cells.reshape(rows, h // rows, cols, w // cols).mean(axis=(1, 3))  # (rows, cols)
    inkiest = np.argsort(ink, axis=None)[::-1][: int(np.ceil(ink.size / 4))]
    return float(mask.reshape(-1)[inkiest].sum())


assert check("pooling: test error (%)", pool_scores["error_pct"], "<", 50.0)  # chance: 90%
for c in examples:
    assert abs(float(c.attention[0].sum()) - 1.0) < 1e-3  # a mask sums to one
on_ink = np.mean([mass_on_digit(c) for c in examples])
assert check("mask mass on the inkiest quarter", on_ink, ">", 0.4)  # where the ink is
assert len(strip.attention) >= 2  # one map per step of the reader
