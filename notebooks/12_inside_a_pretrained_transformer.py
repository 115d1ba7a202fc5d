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
# # Lesson 12: inside a pretrained Transformer
#
# *Runs on the real thing when you have it*: `bert-base-uncased` and `Helsinki-NLP/opus-mt-en-fr`
# from the Hugging Face cache (`hf download bert-base-uncased`) or a `save_pretrained` directory
# under `$ATTNKIT_MODELS` (default `models/`); nothing is downloaded, and without them the last
# section says it skipped. Every other cell builds tiny models from configs.
#
# The Transformers people use (BERT, GPT-2, Llama, Marian translators) are pretrained, and they
# compute attention with PyTorch's `scaled_dot_product_attention` (SDPA): fused kernels that
# never write the weights down. Asking them for `output_attentions=True` switches the whole
# model to the slow "eager" path. `attnkit.capture` takes another way: it lets every SDPA call
# run as it is and recomputes that call's weights from its own queries, keys and mask,
#
# $$A = \mathrm{softmax}\Big(\frac{Q K^\top}{\sqrt{d}} + M\Big),$$
#
# so we see every layer and head of the model as it really runs. With 12 layers of 12 heads
# (BERT-base) that is 144 maps an input: the lesson ends with a few numbers per head that make
# them readable, and with the two heads behind in-context copying: an **induction head** and
# the previous-token head it needs.
#
# It trains nothing, so quick mode and `QUICK=0` are the same: about half a minute on a CPU.

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
import transformers

import attnkit
from attnkit.errors import AttnkitError
from attnkit.families.hf.tiny import save_tiny
from attnkit.viz import plot_heatmap

torch.set_num_threads(1)
ROOT = Path("runs/lesson12")
TEXT = "the cat sat on the mat"

# %% [markdown]
# ## A pretrained model, loaded offline
#
# `save_tiny` builds a small BERT sentence classifier (2 layers x 4 heads, random weights) with
# a tokenizer and saves it with `save_pretrained`, exactly as a downloaded model sits on disk;
# `attnkit.load("hf:DIR")` opens it. The model keeps its SDPA attention; `classify` runs it once
# under `attnkit.capture`.

# %%
bert_dir = save_tiny("bert", ROOT / "tiny-bert")
bert = attnkit.load(f"hf:{bert_dir}")
print(bert, "| attention:", bert.model.config._attn_implementation)
r = bert.classify(TEXT)
print(r.label, {k: round(v, 3) for k, v in r.probs.items()})
print("tokens:", r.source_tokens)
print("maps (L, H, T, T):", r.parts["self"].heads.shape)

# %% [markdown]
# ## The captured weights are the model's own
#
# The check is the one CI runs: load the same files with eager attention, ask it for
# `output_attentions=True`, and compare every layer and head.

# %%
eager = transformers.AutoModelForSequenceClassification.from_pretrained(
    bert_dir, attn_implementation="eager"
).eval()
inputs = bert.processor(TEXT, return_tensors="pt")
with torch.no_grad():
    out = eager(**inputs, output_attentions=True)
eager_maps = torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, T, T)
gap = float(np.abs(r.parts["self"].heads - eager_maps).max())
print(f"largest difference from eager attention: {gap:.1e}")
assert gap < 1e-6

# the same, by hand, on the raw transformers model: a record per attention call
with torch.no_grad(), attnkit.capture(bert.model) as captured:
    bert.model(**inputs)
for record in captured:
    print(record.layer, record.name, record.kind, tuple(record.weights.shape))

# %% [markdown]
# ## Every layer and head
#
# `r.show()` is the interactive view (choose the mean, any layer's head, or the rollout);
# `r.plot(ax, layer=, head=)` draws one map, counted from 1. A random model's heads are nearly
# uniform: each row spreads its weight over the whole sentence (and `[CLS]`, `[SEP]`).

# %%
r.show()

# %%
layers, heads = r.parts["self"].layers_and_heads
fig, axes = plt.subplots(layers, heads, figsize=(3.2 * heads, 3 * layers), squeeze=False)
for layer in range(layers):
    for head in range(heads):
        r.plot(axes[layer, head], layer=layer + 1, head=head + 1)
plt.show()

# %% [markdown]
# ## Rollout: through the layers
#
# A token's representation in layer 2 is already a mix of layer 1's, so one layer's map does not
# say where the output drew from. Attention rollout (Abnar & Zuidema 2020) multiplies the
# layers' head-averaged maps, each with the residual connection added as an identity:
#
# $$\tilde A^{(l)} = \tfrac12\big(A^{(l)} + I\big), \qquad
#   R = \tilde A^{(L)} \cdots \tilde A^{(1)}.$$
#
# A causal language model (a tiny GPT-2) shows it best: its maps are lower-triangular, and the
# rollout piles weight on the first tokens, which every later token reaches by many paths.

# %%
gpt2 = attnkit.load(f"hf:{save_tiny('gpt2', ROOT / 'tiny-gpt2')}")
g = gpt2.generate("the cat sat on", max_new_tokens=4)
print(repr(g.output), g.source_tokens)
fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
tokens = g.source_tokens
plot_heatmap(g.weights, tokens, tokens, ax=axes[0], annotate=False, title="mean attention")
plot_heatmap(g.rollout(), tokens, tokens, ax=axes[1], annotate=False, title="rollout")
plt.show()
assert np.allclose(np.triu(g.rollout(), 1), 0)  # causal: nothing flows from later tokens

# %% [markdown]
# ## 144 heads at a glance: head summaries
#
# `m.head_summary()` feeds the model a random block of tokens said twice, $[x, x]$, and reads a
# few numbers per head from its maps $w$ (rows $i$ = queries, columns $j$ = keys):
#
# * **entropy** $-\sum_j w_{ij} \log w_{ij}$ averaged over rows: low is a sharp head; a uniform
#   head reaches the maximum (`entropy_max`, $\log$ of the keys a row may see);
# * **sink share**, the weight on the first token, where trained heads that have nothing to do
#   park their attention;
# * **previous-token score**, the weight of $i$ on $i - 1$;
# * **induction score** (Olsson et al. 2022): in the second copy, the weight of position $i$ on
#   $i - n + 1$, the token that *followed* the same token last time. A head that does this can
#   continue a pattern it has seen once: the basis of in-context copying;
# * the **distance profile**, the mean weight at each distance $|i - j|$, and its mean.
#
# The random GPT-2 has none of these habits: every head is near the uniform entropy.

# %%
before = gpt2.head_summary(seed=0)
print(before)
print(f"uniform entropy: {before.entropy_max:.3f} nats")
print(before.table("induction", k=4))
before.show("induction")  # the grids, and every head in a table that sorts on a click

# %% [markdown]
# ## An induction head, built by hand
#
# Trained models grow induction heads from text that repeats itself, in two steps spread over
# two layers (Olsson et al. 2022): a head of an early layer writes into each position *which
# token came before it*; a head of a later layer then looks, from token $t$, for the position
# whose previous token was $t$, and copies the token standing there. Training one takes longer
# than a lesson, so we write the two steps down with one-hot vectors, each as a call to
# `scaled_dot_product_attention`, and let `attnkit.capture` find them:
#
# * step 1 (previous token): a mask lets row $i$ see only key $i - 1$, so its output is
#   $e_{x_{i-1}}$, the one-hot vector of the token before it;
# * step 2 (induction): query $\beta\, e_{x_i}$ against keys $e_{x_{j-1}}$, causal, values
#   $e_{x_j}$: the score is $\beta$ where $x_{j-1} = x_i$ and 0 elsewhere, so with $\beta = 20$
#   nearly all the weight goes to the token after the earlier copy, which is then predicted.


# %%
class InductionCircuit(torch.nn.Module):
    """Two attention steps over one-hot tokens: (B, T) ids -> (B, T, V) what comes next."""

    def __init__(self, vocab: int, sharpness: float = 20.0):
        super().__init__()
        self.vocab, self.sharpness = vocab, sharpness

    def forward(self, ids):
        x = F.one_hot(ids, self.vocab).float()[:, None]  # (B, 1, T, V): one head
        size = ids.shape[1]
        before = torch.eye(size, dtype=torch.bool).roll(-1, dims=1)  # row i sees key i - 1
        before[0] = False
        before[0, 0] = True  # the first token has none before it: itself
        previous = F.scaled_dot_product_attention(x, x, x, attn_mask=before)  # e_{x_{i-1}}
        read = F.scaled_dot_product_attention(
            self.sharpness * x, previous, x, is_causal=True, scale=1.0
        )
        return read[:, 0]  # (B, T, V)


vocab, n, bos = 40, 12, 0
block = torch.randperm(vocab - 1, generator=torch.Generator().manual_seed(1))[:n] + 1
ids = torch.cat([torch.tensor([bos]), block, block])[None]  # (1, 1 + 2n): [bos, x, x]
circuit = InductionCircuit(vocab)
with torch.no_grad(), attnkit.capture(circuit) as captured:
    guess = circuit(ids).argmax(-1)[0]  # (T,)
built = captured.head_summary(period=n, offset=1)  # counted from 0, as a capture's records
print(built.table())
second = torch.arange(1 + n, 2 * n)  # the second copy, but its last token
print("continues the pattern:", bool((guess[second] == ids[0, second + 1]).all()))
labels = [str(i) for i in ids[0].tolist()]
fig, axes = plt.subplots(1, 2, figsize=(12, 5))
captured.plot(0, 0, axes[0], source_tokens=labels, output_tokens=labels)
axes[0].set_title(f"step 1: previous token ({built.previous[0, 0]:.2f})")
captured.plot(1, 0, axes[1], source_tokens=labels, output_tokens=labels)
axes[1].set_title(f"step 2: induction ({built.induction[1, 0]:.2f})")
plt.show()

# %% [markdown]
# The second map is the induction head's signature: in the second copy, a bright stripe
# parallel to the diagonal, $n - 1$ positions behind it. The summary finds both steps by their
# scores alone, which is how one finds them among a real model's 144 heads: sort by
# `induction`, then look for a previous-token head in an earlier layer.

# %% [markdown]
# ## The real thing: BERT and a Marian translator
#
# With `bert-base-uncased` or `Helsinki-NLP/opus-mt-en-fr` at hand (the Hugging Face cache, or
# a directory of the same name under `$ATTNKIT_MODELS`), the same calls run on them: 144 heads
# for BERT, and a translator's encoder, decoder and cross-attention. Known habits to look for
# (Clark et al. 2019, "What does BERT look at?"): heads that attend to `[SEP]` or `[CLS]` (a
# high sink share for `[CLS]`), heads on the previous or the next token, broad heads in the
# first layers.

# %%
LOCAL = Path(os.environ.get("ATTNKIT_MODELS", "models"))


def find(name: str):
    """The model ``name`` from ``$ATTNKIT_MODELS/<name>`` or the HF cache, or None (said)."""
    for where in (LOCAL / name, LOCAL / name.split("/")[-1], name):
        if isinstance(where, Path) and not where.is_dir():
            continue
        try:
            return attnkit.load(f"hf:{where}")
        except AttnkitError as error:
            reason = str(error)
    print(f"skipped {name}: not found offline ({reason})")
    return None


real_bert = find("bert-base-uncased")
if real_bert is not None:
    e = real_bert.run(TEXT)
    e.show()
    summary = real_bert.head_summary(seed=0)
    print(summary.table("induction", k=5))
    print(summary.table("sink", k=5))
    summary.plot()

# %%
marian = find("Helsinki-NLP/opus-mt-en-fr")
if marian is not None:
    (t,) = marian.translate(TEXT)
    print(t.output)
    t.show(words=True)
    print(t.head_summary("cross").table("entropy", k=5, lowest=True))  # the sharpest heads
    marian.head_summary(part="decoder", seed=0).plot()

# %% [markdown]
# ## What to look for
#
# * The captured maps equal eager attention's to float rounding, while the model ran SDPA: no
#   switch of implementation, no approximation.
# * Random heads are close to the uniform entropy and have no induction score; the hand-built
#   circuit scores 1 on both of its steps, previous token then induction, and its stripe sits
#   $n - 1$ behind the diagonal.
# * The rollout of a causal model collects weight on the first tokens: a reason not to read one
#   layer's map as "what the model used".
# * On BERT-base, if you have it: many heads with a large sink share on `[CLS]` (their rows
#   nearly all on it), a few sharp previous-token heads, and broad heads in the first layers.
#
# ## Exercises
#
# 1. Lower the circuit's `sharpness` to 2. What happens to the induction score, and to the
#    prediction? Put a token twice inside the block: which keys does step 2 split its weight
#    between?
# 2. Drop step 1 (keys $e_{x_j}$ instead of $e_{x_{j-1}}$): which score lights up now, and what
#    does the circuit predict? (A *duplicate-token* head.)
# 3. Train a small GPT-2 on random blocks said twice (`transformers.GPT2LMHeadModel`), then
#    `attnkit.load("hf:...").head_summary()`: does an induction head appear, and in which layer?
#    Try block lengths that change from batch to batch, and a random prefix before the block,
#    or it may learn a shortcut by position instead (check with another `period`).
# 4. Summarize the tiny BERT on a sentence of your own, `r.head_summary()`, and sort by
#    `distance`; on the command line: `attnkit explain --model hf:runs/lesson12/tiny-gpt2
#    --heads -o heads.png`.

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
assert gap < 1e-6  # capture under SDPA = eager output_attentions
assert before.induction.max() < 0.15  # a random model has no induction head
assert built.previous[0, 0] == 1.0 and built.induction[1, 0] > 0.99  # the circuit's two steps
assert bool((guess[second] == ids[0, second + 1]).all())  # and it continues the pattern
