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
# # Lesson 6: from Q/K/V to the Transformer
#
# Lessons 1 to 5 attended from a decoder to an encoder. Vaswani et al. (2017) kept only the
# attention: every position of a sequence attends to every other (**self-attention**), with
# learnt projections into **queries, keys and values**, in several **heads** at once, and
# positions added to the inputs because attention alone cannot tell order. This lesson builds
# those pieces with attnkit's own modules, trains small Transformers on the numbers task with
# no positions, sinusoidal ones and a learned table, and asks which heads of a trained model
# align.
#
# Quick mode (the default) trains three tiny Transformers (under a minute in all); `QUICK=0`
# trains `configs/numbers_transformer.yaml` as shipped on all four languages, three times.

# %%
import matplotlib.pyplot as plt
import torch

import attnkit
from attnkit.attention.qkv import MultiHeadAttention
from attnkit.attention.scores import masked_softmax, scaled_dot_scores
from attnkit.lessons.checks import check
from attnkit.lessons.mode import pick, seed, seeded
from attnkit.models.transformer import sinusoids
from attnkit.viz import plot_heatmap

torch.manual_seed(seed())  # 0 unless the environment variable SEED says otherwise
torch.set_num_threads(1)

# %% [markdown]
# ## Attention as a soft dictionary lookup
#
# A Python dict returns the value of the one key equal to the query. Attention returns a blend
# of all values, weighted by how well each key matches:
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d}}\right) V$$
#
# Below, four keys are nearly orthogonal directions; a query close to key 2 gets most of its
# value, and a query halfway between keys 0 and 3 gets half of each.

# %%
keys = torch.eye(4) * 4  # (S, d): four keys
values = torch.tensor([[10.0], [20.0], [30.0], [40.0]])  # (S, 1)
queries = torch.stack([keys[2], (keys[0] + keys[3]) / 2, torch.zeros(4)])  # (T, d)
weights = masked_softmax(scaled_dot_scores(queries, keys), None)  # (T, S)
print((weights @ values).squeeze(-1))
fig, ax = plt.subplots(figsize=(5, 2.5))
plot_heatmap(weights, ["k0", "k1", "k2", "k3"], ["near k2", "k0 + k3", "zero"], ax=ax)
plt.show()

# %% [markdown]
# ## Self-attention does not know the order
#
# In self-attention the queries, keys and values all come from the same sequence $X$:
# $Q = X W_Q$, $K = X W_K$, $V = X W_V$. Shuffle the rows of $X$ and the output rows are
# shuffled the same way, nothing else changes: self-attention is *permutation equivariant*.
# A sentence and its words in another order look alike to it.

# %%
attention = MultiHeadAttention(16, 16, 16, heads=4, packed=True)
x = torch.randn(1, 6, 16)  # (B, N, D): a sequence of six vectors
shuffle = torch.tensor([3, 0, 5, 1, 4, 2])
with torch.no_grad():
    out, _ = attention(x, x)
    out_shuffled, _ = attention(x[:, shuffle], x[:, shuffle])
equivariant = torch.allclose(out[:, shuffle], out_shuffled, atol=1e-5)
print("shuffling the input shuffles the output alike:", equivariant)

# %% [markdown]
# ## Positional encodings
#
# The Transformer adds to each input embedding a vector that depends on its position $p$:
#
# $$PE_{p, 2i} = \sin\!\left(p / 10000^{2i/D}\right), \qquad
#   PE_{p, 2i+1} = \cos\!\left(p / 10000^{2i/D}\right)$$
#
# Each pair of columns is a clock of another speed. The dot product of two positions' vectors
# depends only on how far apart they are, so attention can learn "look one to the left".
#
# Two alternatives: a **learned** table, one trained vector per position (Gehring et al. 2017;
# BERT and GPT use one), `model.positional: learned` with `model.max_positions` rows; and
# **none** at all, `model.positional: none`.

# %%
table = sinusoids(50, 32)  # (positions, D)
fig, axes = plt.subplots(1, 2, figsize=(12, 3.5))
axes[0].imshow(table.T, aspect="auto", cmap="RdBu")
axes[0].set_xlabel("position p")
axes[0].set_ylabel("dimension")
axes[0].set_title("sinusoidal positional encodings")
similarity = table @ table.T
axes[1].imshow(similarity, cmap="viridis")
axes[1].set_title("PE_p . PE_q: a band along the diagonal")
plt.show()
with torch.no_grad():
    positioned = x + sinusoids(6, 16)
    out, _ = attention(positioned, positioned)
    shuffled = x[:, shuffle] + sinusoids(6, 16)
    out_shuffled, _ = attention(shuffled, shuffled)
print("with positions:", torch.allclose(out[:, shuffle], out_shuffled, atol=1e-5))

# %% [markdown]
# ## Multi-head attention
#
# $H$ heads each attend in a $D/H$-wide subspace with projections of their own, and their
# outputs are concatenated: $\mathrm{MultiHead}(X) = [\mathrm{head}_1; \dots;
# \mathrm{head}_H] W_O$. Each head can look somewhere else. attnkit's module returns every
# head's weights:

# %%
with torch.no_grad():
    _, per_head = attention.forward_heads(positioned, attention.project_keys(positioned))
fig, axes = plt.subplots(1, 4, figsize=(13, 3))
for h, ax in enumerate(axes):
    plot_heatmap(per_head[0, h], ax=ax, annotate=False, title=f"head {h + 1} (untrained)")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Positional encodings compared: none, sinusoidal, learned
#
# An encoder of self-attention layers, a decoder of causal self-attention and **cross**-attention
# layers (the decoder's queries, the encoder's keys and values: the attention of lessons 2-5).
# Three of them, alike but for `model.positional`, learn the German numbers: the characters of
# *"siebenundneunzig"* in another order spell another number, or none.

# %%
CONFIGS = {info.name: info.path for info in attnkit.configs()}
QUICK_MODEL = {  # German numbers only, a two-head model of width 48
    "data.languages": ["de"],
    "data.max_number": 999,
    "model.embedding_dim": 48,
    "model.ff_dim": 96,
    "model.heads": 2,
    "model.dropout": 0.0,
    "train.epochs": 16,
    "train.batch_size": 16,
    "train.lr": 0.002,
    "train.warmup_steps": 100,
}
overrides = seeded(  # SEED=k: train.seed 1000 + k
    {
        **pick(QUICK_MODEL, {}),
        "train.patience": pick(100, 4),
        "train.max_minutes": pick(3, 8),
        "train.threads": 1,
        "train.progress": False,
        "train.tensorboard": False,
    }
)
KINDS = ("none", "sinusoidal", "learned")
models, kind_scores = {}, {}
for kind in KINDS:
    run = attnkit.train(
        CONFIGS["numbers_transformer"],
        {**overrides, "model.positional": kind},
        output_dir=f"runs/lesson06/{kind}",
        overwrite=True,
    )
    models[kind] = attnkit.load(run.best)
    kind_scores[kind] = models[kind].evaluate(split="test", beam=1)
exact = {kind: kind_scores[kind]["greedy"]["exact_match"] for kind in KINDS}
kind_aer = {kind: kind_scores[kind]["alignment"]["teacher_forced"]["aer"] for kind in KINDS}
for kind in KINDS:
    print(f"{kind:10} test exact match {exact[kind]:6.2f}%   AER {kind_aer[kind]:6.2f}")
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
axes[0].bar(KINDS, [exact[k] for k in KINDS])
axes[0].set_ylabel("test exact match (%)")
axes[1].bar(KINDS, [kind_aer[k] for k in KINDS], color="tab:orange")
axes[1].set_ylabel("test AER (%), mean of the heads")
fig.tight_layout()
plt.show()

# %% [markdown]
# The sinusoids are a formula; the learned table is what training made of its random start.
# Below, the first 40 of its 512 rows beside the sinusoids of the same width, and how alike
# (cosine) every two positions are. The inputs here are at most 30 characters long (</s>
# included, *siebenhundertsiebenundzwanzig*): the encoder's rows 30 to 511 were never trained.

# %%
learned = models["learned"].translator.model.encoder.embeddings.positions.table.weight.detach()
rows = 40
fixed = sinusoids(rows, learned.size(1))
fig, axes = plt.subplots(2, 2, figsize=(12, 6.5))
for column, (name, table_) in enumerate((("sinusoidal", fixed), ("learned", learned[:rows]))):
    axes[0, column].imshow(table_.T, aspect="auto", cmap="RdBu")
    axes[0, column].set_title(f"{name}: the first {rows} positions")
    axes[0, column].set_xlabel("position p")
    axes[0, column].set_ylabel("dimension")
    unit = torch.nn.functional.normalize(table_, dim=1)
    axes[1, column].imshow(unit @ unit.T, cmap="viridis", vmin=-1, vmax=1)
    axes[1, column].set_title(f"{name}: cosine of positions p, q")
    axes[1, column].set_xlabel("position q")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## A trained Transformer: which heads align?
#
# attnkit keeps the cross-attention of every decoder layer and head. The sinusoidal model's:

# %%
transformer = models["sinusoidal"]
t = transformer.translate("siebenundneunzig")[0]
print(t.output, t.heads.shape)  # (T, layers, heads, S)
layers, heads = t.heads.shape[1:3]
fig, axes = plt.subplots(layers, heads, figsize=(5 * heads, 3 * layers), squeeze=False)
for layer in range(layers):
    for head in range(heads):
        ax = axes[layer, head]
        t.plot(ax, layer=layer + 1, head=head + 1)
        ax.set_title(f"layer {layer + 1}, head {head + 1}")
fig.tight_layout()
plt.show()

# %% [markdown]
# The interactive view has a choice of the mean map or any layer's head:

# %%
t.show()

# %%
scores = kind_scores["sinusoidal"]
alignment = scores["alignment"]
print("exact match:", scores["greedy"]["exact_match"])
print("mean of all heads: AER", alignment["teacher_forced"]["aer"])
for row in alignment["per_head"]:
    print(f"layer {row['layer']}, head {row['head']}: AER {row['aer']}")
fig, ax = plt.subplots(figsize=(6, 3))
labels = [f"L{r['layer']}H{r['head']}" for r in alignment["per_head"]]
ax.bar(
    ["mean", *labels],
    [alignment["teacher_forced"]["aer"], *[r["aer"] for r in alignment["per_head"]]],
)
ax.set_ylabel("test AER (%)")
plt.show()

# %% [markdown]
# ## What to look for
#
# * The soft lookup blends values in proportion to the weights: halfway between two keys gives
#   half of each value, the zero query the mean of all four.
# * Without positions, shuffling the input only shuffles the output; with the sinusoids added,
#   it changes the outputs themselves: order now matters.
# * Trained without positions, the Transformer reads a bag of characters and gets far fewer
#   numbers right; sinusoidal and learned positions both fix it, and end up close. The
#   sinusoids' similarity is a smooth band; the learned table's is mostly its random start,
#   enough to tell positions apart, with no notion of "near" unless training puts one there.
# * In the trained model some heads align with the gold links and others do not: a head may
#   track the position in the output, or look at `</s>`. The mean of the heads is often a
#   better alignment than any single one.
#
# ## Exercises
#
# 1. Set `model.heads: 1` and retrain. Is the single head's map closer to the gold links than
#    the mean of several?
# 2. Show that $PE_p \cdot PE_{p+k}$ does not depend on $p$ (compute it for a few $p$ and $k$).
# 3. Train the learned model on `data.max_number: 99` only and translate a number in the
#    hundreds: its last characters sit at positions no training input reached. Does the
#    sinusoidal model, trained alike, do better?

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
assert torch.allclose((weights @ values)[1], torch.tensor([25.0]), atol=0.5)  # half of each
assert equivariant  # self-attention alone ignores order
assert not torch.allclose(out[:, shuffle], out_shuffled, atol=1e-3)  # positions break it
offsets = [float(table[p] @ table[p + 3]) for p in (0, 10, 20, 30)]
assert max(offsets) - min(offsets) < 1e-3  # similarity depends on the distance alone
assert t.heads.shape[1:3] == (layers, heads)
# without positions the Transformer is clearly worse on a task where order matters
with_positions = min(exact["sinusoidal"], exact["learned"])
assert check(
    "exact match: positions (worse kind) - none (points)", with_positions - exact["none"], ">=", 30
)
width = models["learned"].config.model.embedding_dim
assert learned.shape == (512, width)  # one trained row per position, model.max_positions rows
# the cross-attention aligns, and so does its best head on its own
assert check(
    "sinusoidal, mean of the heads: test AER (%)", alignment["teacher_forced"]["aer"], "<", 25.0
)
assert check("sinusoidal, best head: test AER (%)", alignment["per_head"][0]["aer"], "<", 25.0)
