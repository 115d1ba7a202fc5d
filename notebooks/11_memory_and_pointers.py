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
# # Lesson 11: memory and pointers
#
# *Needs bAbI*: attnkit reads it from `$ATTNKIT_DATA_DIR/babi` (the release tasks_1-20_v1-2).
#
# Two uses of attention beside reading a source sentence. A **memory network** (Sukhbaatar et
# al. 2015, end-to-end memory networks) stores a story one sentence per memory slot and answers
# a question by attending over the slots, several times over: each *hop* reads the memory with
# a query refined by the hop before. A **pointer network** (Vinyals, Fortunato and Jaitly 2015)
# answers with the attention itself: its output at each step is a choice of one of its inputs,
# so the heatmap is not a view of the answer, it *is* the answer.
#
# Quick mode (the default) trains a small memory network on bAbI task 1 and a pointer network
# that sorts 10 numbers, in about a minute; `QUICK=0` trains `configs/babi_memn2n.yaml` and
# `configs/pointer_sort10.yaml` as shipped.

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

import attnkit
from attnkit.lessons.mode import pick

torch.set_num_threads(1)
CONFIGS = {info.name: info.path for info in attnkit.configs()}

# %% [markdown]
# ## Memory networks: attention over a story
#
# bAbI task 1 (Weston et al. 2015) asks where someone is after a short story of people moving
# about: *"Mary moved to the bathroom. John went to the hallway. Where is Mary?"*. The story's
# sentences $x_i$ are embedded twice, as keys $m_i$ (matrix $A$) and values $c_i$ (matrix $C$),
# the question as $u$ (matrix $B$); a hop attends over the memories and adds what it read to
# the query:
#
# $$p_i = \mathrm{softmax}_i\,(u^{k\top} m_i), \qquad o^k = \sum_i p_i c_i, \qquad
#   u^{k+1} = u^k + o^k, \qquad \hat a = \mathrm{softmax}\big(W (u^K + o^K)\big)$$
#
# with $K = 3$ hops. The gold answer is a word; the dataset also names the **supporting fact**,
# the sentence that gives it (*Mary moved to the bathroom*), so we can check where each hop
# looks.

# %%
run = attnkit.train(
    CONFIGS["babi_memn2n"],
    overrides={
        "data.task": 1,
        # quick: 30 epochs at twice the shipped rate, the softmax from the start (see RESULTS)
        **pick({"train.epochs": 30, "train.linear_start": 0, "train.lr": 0.01}, {}),
        "train.lr_step_epochs": pick(7, 25),
        "train.seed": 0,
        "train.verbose": False,
        "train.tensorboard": False,
    },
    output_dir="runs/lesson11/babi",
    overwrite=True,
)
memnet = attnkit.load(run.best)
babi = memnet.evaluate(split="test")
print(babi.table())
support = babi["tasks"]["1"]["support_attention_pct"]
fig, ax = plt.subplots(figsize=(5, 3))
ax.bar([f"hop {k + 1}" for k in range(len(support))], support)
ax.set_ylabel("% of questions")
ax.set_title("the most attended sentence is the supporting fact")
ax.set_ylim(0, 100)
plt.show()

# %% [markdown]
# ## Hop by hop
#
# A story of our own. Mary moves twice: the answer is the *later* move, so the memory must
# know the order of the sentences (a learnt vector per memory age, `model.temporal`).

# %%
story = """Mary moved to the bathroom.
John went to the hallway.
Daniel travelled to the garden.
Mary journeyed to the office.
John moved to the kitchen."""
a = memnet.answer(story, "Where is Mary?")
print(a.answer)
print(np.round(a.attention, 2))  # (hops, sentences)
a.show()

# %%
e = memnet.explain(story, "Where is Mary?", method="gradient")
fig, axes = plt.subplots(1, 2, figsize=(11, 3), gridspec_kw={"width_ratios": [3, 1]})
a.plot(axes[0])
axes[1].barh(range(len(e.saliency)), e.saliency)
axes[1].invert_yaxis()
axes[1].set_yticks(range(len(e.saliency)), [f"{i + 1}" for i in range(len(e.saliency))])
axes[1].set_title("gradient saliency")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Pointer networks: the attention is the answer
#
# To sort numbers, the output must be the inputs themselves, in another order: no fixed output
# vocabulary fits every input length. A pointer network encodes the inputs $x_1..x_n$ into
# $e_1..e_n$, and at each step $t$ its decoder state $d_t$ scores every input with the additive
# attention of lesson 2, takes the softmax, and stops there:
#
# $$u^t_j = v^\top \tanh(W_1 e_j + W_2 d_t), \qquad
#   p(C_t = j \mid C_{<t}, x) = \mathrm{softmax}_j\, u^t_j$$
#
# The chosen input $C_t$ (the most likely one, greedily) is fed to the next step; an extra
# *end* slot stops it. The network is trained on 10 numbers; the same weights read any $n$.

# %%
n_train = 10
run = attnkit.train(
    CONFIGS["pointer_sort10"],
    overrides={
        "data.points": n_train,
        **pick(
            {
                "data.train_size": 20000,
                "data.dev_size": 200,
                "data.test_size": 200,
                "train.epochs": 3,
                "model.hidden": 32,
                "model.attention_dim": 32,
            },
            {},
        ),
        "train.seed": 0,
        "train.max_minutes": pick(None, 8),
        "train.threads": 1,
        "train.progress": False,
        "train.tensorboard": False,
    },
    output_dir="runs/lesson11/pointer",
    overwrite=True,
)
pointer = attnkit.load(run.best)
rng = np.random.default_rng(0)
values = np.round(rng.random(7), 2)
s = pointer.solve(values)
print(values, "->", s.order, values[s.order])
s.plot()  # the values and the chosen order beside the heatmap

# %%
s.show()  # the same heatmap, interactive: hover over a cell

# %% [markdown]
# Each row of the heatmap is one step of the output, each column one input (and *end*, the
# first). The brightest cell of row $t$ is the $t$-th number of the answer: reading the map
# from top to bottom *is* reading the sorted list.
#
# ## Shorter and longer than it was trained on

# %%
LENGTHS = range(5, 11)
exact = {}
for n in LENGTHS:
    sets = [rng.random(n) for _ in range(100)]
    exact[n] = 100 * np.mean([pointer.solve(x).order == list(np.argsort(x)) for x in sets])
print("exact match (%) by n:", {n: round(v) for n, v in exact.items()})
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(list(exact), list(exact.values()), "o-")
ax.axvline(n_train, color="grey", ls=":", label="trained on")
ax.set_xlabel("numbers to sort (n)")
ax.set_ylabel("exactly sorted (%)")
ax.set_ylim(0, 105)
ax.legend()
plt.show()

# %% [markdown]
# ## What to look for
#
# * The memory network's hops: the first spreads its weight over the sentences about the
#   person asked for; the later hops settle on the supporting fact, the person's *last* move.
#   The bar chart measures it over the test questions.
# * Its saliency mostly agrees: the answer's gradient is largest on the sentence the hops chose,
#   and large on Mary's *earlier* move too (the answer also depends on not reading that one),
#   where the last hop puts little weight.
# * The pointer's heatmap: one bright cell per row, every input used once, in ascending order;
#   the last row points at *end*. Close values are where it hesitates (the cell beside the
#   brightest is lit).
# * It sorts shorter lists than it was trained on about as well: the attention does not care how
#   many inputs there are.
#
# ## Exercises
#
# 1. Train the memory network with `model.hops: 1`. What happens to the error on task 1, and
#    on task 2 (`data.task: 2`, two supporting facts)?
# 2. Ask about a person the story never mentions, or with a word the model never saw
#    (`a.unknown` lists them). Where do the hops look?
# 3. Train the pointer on `configs/pointer_hull10.yaml` (the convex hull, Vinyals et al.'s
#    other task): `s.plot()` draws the hull it chose beside the heatmap.

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
# Margins seen in quick mode over training seeds 0, 1, 2: memory network test error 4.1 / 4.0 /
# 5.7%, last-hop supporting-fact attention 97.4 / 96.3 / 95.2%; pointer (trained on n = 10)
# exactly sorted at n = 5: 92 / 100 / 94%, at n = 10: 84 / 90 / 82% (seed 0: this lesson's 100
# sets; seeds 1 and 2: 50 other random sets each). The typed story, each seed: "office", the last
# hop's weight on sentence 4 0.84 / 0.91 / 0.84, its saliency 0.56 / 0.62 / 0.62 (sentence 1:
# 0.43 / 0.35 / 0.35); the 7 values sorted exactly by each pointer.
assert babi["tasks"]["1"]["error_pct"] <= 10  # task 1 is solved
assert support[-1] >= 90  # the last hop reads the supporting fact
assert a.answer == "office"
assert int(a.attention[-1].argmax()) == 3  # the last hop reads "Mary journeyed to the office"
assert int(e.saliency.argmax()) == 3  # and the answer's gradient points there too
best = s.attention[:-1, 1:].argmax(-1)  # each step's brightest input (the end slot left out)
assert best.tolist() == s.order  # the heatmap is the answer
assert list(values[s.order]) == sorted(values)
assert exact[5] >= 80 and exact[10] >= 50
