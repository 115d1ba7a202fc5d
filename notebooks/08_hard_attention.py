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
# # Lesson 8: hard attention
#
# *Needs MNIST*: attnkit reads it from `$ATTNKIT_DATA_DIR/mnist` or its cache, and downloads it
# (11 MB) where it is missing.
#
# Soft attention reads *everything*, weighted. Hard attention *chooses* where to look and reads
# only that: the Recurrent Attention Model (Mnih et al. 2014) takes a few small glimpses of an
# image, each where its policy says, and classifies from what it saw. It reads a fraction of
# the pixels; the price is that "where to look" is a sample, not a weighted average, so no
# gradient flows through it. REINFORCE trains it instead: a glimpse path that ended in the
# right answer is made more likely.
#
# Quick mode (the default) trains RAM and a soft attention-pooling classifier for a minute on
# a few thousand digits; `QUICK=0` trains them as `configs/ram_mnist28.yaml` ships (18 minutes
# for RAM on a 2-core CPU: docs/RESULTS.md).

# %%
import matplotlib.pyplot as plt
import torch

import attnkit
from attnkit.lessons.checks import check
from attnkit.lessons.mode import pick, seed, seeded

torch.manual_seed(seed())  # 0 unless the environment variable SEED says otherwise
torch.set_num_threads(1)
CONFIGS = {info.name: info.path for info in attnkit.configs()}
QUICK_DATA = {"data.train_size": 5000, "data.dev_size": 500, "data.test_size": 500}
TRAIN = seeded(
    {  # SEED=k: train.seed 1000 + k
        "train.max_minutes": pick(5, 20),
        "train.fit_schedule_to_budget": pick(False, True),  # quick: the data decide, not the clock
        "train.threads": 1,
        "train.progress": False,
        "train.verbose": False,
        "train.tensorboard": False,
    }
)

# %% [markdown]
# ## Glimpses and a policy
#
# At step $t$ the model has a location $l_{t-1} \in [-1, 1]^2$. Its **glimpse sensor** cuts a
# small patch there, a network embeds "what" (the patch) and "where" ($l_{t-1}$) into $g_t$, and
# a recurrent **core** updates its state $h_t = f(h_{t-1}, g_t)$. The **location policy** is a
# Gaussian around a point the state proposes, $l_t \sim \mathcal{N}(\mu(h_t), \sigma^2)$; after
# the last glimpse the state is classified.
#
# ## REINFORCE with a baseline
#
# The reward $R$ is 1 for a right answer and 0 otherwise. The sampled locations get the
# gradient of the expected reward (Williams 1992), with a learnt baseline $b_t = b(h_t)$ that
# predicts $R$ and so reduces the variance without biasing it:
#
# $$\nabla_\theta J = \mathbb{E}\Big[\sum_t \nabla_\theta \log \pi_\theta(l_t \mid h_t)\,
#   (R - b_t)\Big]$$
#
# The classifier itself learns by backpropagation (cross-entropy), the baseline by regression
# to $R$: a *hybrid* loss.

# %%
QUICK_RAM = {**QUICK_DATA, "model.hidden": 128, "train.epochs": 4, "train.patience": None}
run = attnkit.train(
    CONFIGS["ram_mnist28"],
    {**pick(QUICK_RAM, {}), **TRAIN},
    output_dir="runs/lesson08/ram",
    overwrite=True,
)
ram = attnkit.load(run.best)
ram_scores = ram.evaluate(split="test")
print(ram_scores)

# %% [markdown]
# ## The glimpse path
#
# Each picture shows one test digit and where RAM looked, step by step (the squares are the
# glimpses, in order).

# %%
c = ram.classify(0)
print(c.prediction, c.label, c.glimpses[:3])
fig, ax = plt.subplots(figsize=(4, 4))
ax.imshow(c.image, cmap="gray")
h, w = c.image.shape
xs = [(g["x"] + 1) / 2 * w for g in c.glimpses]
ys = [(g["y"] + 1) / 2 * h for g in c.glimpses]
ax.plot(xs, ys, "o-", color="tab:orange")
for k, (x, y, g) in enumerate(zip(xs, ys, c.glimpses)):
    half = g["size"] / 2
    ax.add_patch(plt.Rectangle((x - half, y - half), g["size"], g["size"], fill=False, ec="w"))
    ax.annotate(str(k + 1), (x, y), color="yellow")
ax.set_title(f"RAM: pred {c.prediction} (true {c.label})")
plt.show()
c.show()

# %% [markdown]
# ## Soft against hard, on the same digits
#
# The attention-pooling classifier of lesson 7 trained on the same data: it looks at every
# pixel, with a soft mask over its CNN's grid. Compare the accuracy, and how many pixels each
# reads per image.

# %%
QUICK_POOL = {
    **QUICK_DATA,
    "data.task": "mnist",
    "model.channels": [8, 16],
    "model.attention_hidden": 16,
    "train.epochs": 5,
    "train.batch_size": 64,
    "train.lr": 0.003,
    "train.patience": None,
}
FULL_POOL = {"data.task": "mnist", "data.canvas": 28}
run = attnkit.train(
    CONFIGS["attnpool_cluttered60"],
    {**pick(QUICK_POOL, FULL_POOL), **TRAIN},
    output_dir="runs/lesson08/pool",
    overwrite=True,
)
soft = attnkit.load(run.best)
soft_scores = soft.evaluate(split="test")
config = ram.config.model
read = config.glimpses * config.scales * config.patch**2  # pixels RAM reads (patches overlap)
pixels = h * w
table = {
    "RAM (hard)": (ram_scores["error_pct"], min(read, pixels)),
    "attention pooling (soft)": (soft_scores["error_pct"], pixels),
}
for name, (error, seen) in table.items():
    print(f"{name:26} test error {error:5.1f}%   pixels read per image {seen}")
fig, axes = plt.subplots(1, 2, figsize=(9, 3))
axes[0].bar(list(table), [e for e, _ in table.values()])
axes[0].set_title("test error (%)")
axes[1].bar(list(table), [s for _, s in table.values()], color="tab:orange")
axes[1].set_title("pixels read per image")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## What to look for
#
# * The first glimpse goes to one place learnt for every image (the policy has seen nothing
#   yet). With the full budget the later ones move onto the strokes of the digit, another path
#   for every image; after quick mode's minute they have barely left the centre, which on
#   28x28 digits is where most of the ink is.
# * RAM reads fewer pixels than there are in the image, and its compute per image does not
#   grow with the canvas: on a $60 \times 60$ canvas (`configs/ram_translated60.yaml`) it reads
#   as much as here, while a CNN's cost grows with the area.
# * In quick mode the soft model is ahead: REINFORCE learns from a reward of 0 or 1 per image,
#   a far noisier signal than a gradient. With its full budget RAM reaches 1.0% error
#   (docs/RESULTS.md).
#
# ## Exercises
#
# 1. Set `model.std` to 0.05 and to 0.3. What does the spread of the policy do to learning?
# 2. Train with `model.reinforce_weight: 0` (no REINFORCE): the locations stay wherever the
#    untrained policy puts them. How much worse is the error?
# 3. Evaluate with `mc_samples=1` and `mc_samples=10` (`ram.evaluate(split="test",
#    mc_samples=...)`). Why does averaging several glimpse paths help?

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
assert len(c.glimpses) == config.glimpses  # one glimpse per step
assert all(-1.0 <= g["x"] <= 1.0 and -1.0 <= g["y"] <= 1.0 for g in c.glimpses)
assert read < pixels  # hard attention reads less than the whole image
# REINFORCE learns to look (chance: 90% error)
assert check("RAM: test error (%)", ram_scores["error_pct"], "<", 60.0)
assert check("soft attention: test error (%)", soft_scores["error_pct"], "<", 30.0)
