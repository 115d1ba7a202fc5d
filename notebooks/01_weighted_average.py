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
# # Lesson 1: attention is a weighted average
#
# Every attention mechanism in attnkit, from Bahdanau's to the Transformer's, does one thing:
# a **query** looks at a set of **keys**, turns how well it matches each of them into weights
# that sum to one, and returns the weighted average of the **values** that sit with the keys.
# Long before neural networks, Nadaraya (1964) and Watson (1964) predicted a function this way:
# the value at a new point is an average of the training values, weighted by how close their
# inputs are. This lesson builds attention from that idea: kernels, a width that can be learnt,
# and the masked softmax that lets a batch of unequal lengths share one tensor.
#
# Runs in well under a minute (`QUICK=1`, the default); `QUICK=0` uses more data.

# %%
import matplotlib.pyplot as plt
import torch

from attnkit.attention.scores import masked_softmax
from attnkit.lessons import kernel_regression as kr
from attnkit.lessons.checks import check
from attnkit.lessons.mode import pick, seed
from attnkit.viz import plot_heatmap

SEED = seed()  # 0 unless the environment variable SEED says otherwise
torch.manual_seed(SEED)
torch.set_num_threads(1)
N = pick(50, 200)  # training points
keys, values = kr.toy_data(N, seed=SEED)  # x_i (keys) and noisy y_i (values)
queries = torch.linspace(0, 5, 60)  # where we predict
target = kr.truth(queries)

# %% [markdown]
# ## Attention pooling
#
# For a query $q$ and key-value pairs $(k_i, v_i)$, $i = 1..n$:
#
# $$f(q) = \sum_{i=1}^{n} \alpha(q, k_i)\, v_i, \qquad
#   \alpha(q, k_i) = \frac{\exp a(q, k_i)}{\sum_{j=1}^{n} \exp a(q, k_j)}$$
#
# The **score** $a(q, k)$ says how well a query matches a key. The Gaussian kernel of width
# $w$ scores closeness, $a(q, k) = -\frac{(q - k)^2}{2 w^2}$, so near keys get most of the
# weight. The simplest score of all, a constant, gives every key the same weight: $f(q)$ is
# then the plain mean of the values, whatever the query.

# %%
pred, weights = kr.nadaraya_watson(queries, keys, values, "gaussian", width=0.5)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(queries, target, label="truth: 2 sin(x) + x^0.8")
ax.plot(queries, pred, label="Nadaraya-Watson, Gaussian w = 0.5")
ax.axhline(float(values.mean()), color="grey", ls=":", label="constant score: the mean")
ax.plot(keys, values, "o", alpha=0.4, label="training data")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The weights themselves are an attention matrix: one row per query, one column per key
# (keys are sorted by $x$). attnkit draws it with the same heatmap it uses for translations;
# here 15 queries over 25 of the keys, with a narrower kernel ($w = 0.15$) so the band is sharp.

# %%
_, band = kr.nadaraya_watson(queries[::4], keys[::2], values[::2], "gaussian", width=0.15)
fig, ax = plt.subplots(figsize=(7, 5))
plot_heatmap(band, ax=ax, annotate=False, title="queries (rows) x keys (columns)")
plt.show()

# %% [markdown]
# ## Kernels and widths
#
# Other kernels score closeness differently: the Laplace kernel $-|q - k| / w$ has heavier
# tails; the **boxcar** gives equal weight to every key within $w$ and none beyond. It is a
# *mask*: keys out of reach are switched off before the softmax, and get exactly zero.

# %%
fig, axes = plt.subplots(1, 3, figsize=(11, 3), sharey=True)
for ax, kernel in zip(axes, kr.KERNELS):
    p, w = kr.nadaraya_watson(queries, keys, values, kernel, width=0.5)
    ax.plot(queries, target, color="grey")
    ax.plot(queries, p)
    ax.set_title(f"{kernel}: test MSE {kr.mse(p, target):.3f}")
plt.show()

# %% [markdown]
# The width matters more than the kernel. Too narrow and the average follows the noise of one
# or two neighbours; too wide and every query sees every key alike, back to the mean.

# %%
widths = [0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.2, 2.0, 5.0]
errors = [kr.mse(kr.nadaraya_watson(queries, keys, values, width=w)[0], target) for w in widths]
entropies = [kr.entropy(kr.kernel_weights(queries, keys, width=w)) for w in widths]
fig, ax = plt.subplots(figsize=(5, 3))
ax.semilogx(widths, errors, "o-", label="test MSE")
ax.semilogx(widths, [e / 5 for e in entropies], "s--", label="attention entropy / 5 (nats)")
ax.set_xlabel("Gaussian width w")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## A width that is learnt
#
# Make $w$ a parameter and fit it by gradient descent: predict every training value from the
# *other* training points (leave-one-out: the point's own key is masked) and minimise the
# squared error. This is the first trainable attention of the course.

# %%
width = kr.fit_width(keys, values, steps=pick(150, 400))
fitted, fitted_weights = kr.nadaraya_watson(queries, keys, values, width=width)
constant_mse = kr.mse(torch.full_like(target, float(values.mean())), target)
fitted_mse = kr.mse(fitted, target)
print(f"learnt width {width:.3f}: test MSE {fitted_mse:.3f} (constant: {constant_mse:.3f})")
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(queries, target, color="grey", label="truth")
ax.plot(queries, fitted, label=f"learnt w = {width:.2f}")
ax.plot(keys, values, "o", alpha=0.3)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## Masked softmax: a batch of unequal lengths
#
# In a batch, one sentence has 5 words and another 3; both are padded to 5 keys. The padding
# must receive no weight. attnkit turns a boolean mask (True = may attend) into weights in one
# place, `masked_softmax`: masked keys get exactly 0 and a row with nothing to attend to gets
# zeros, never NaN.
#
# $$\alpha_i = \frac{m_i \exp s_i}{\sum_j m_j \exp s_j}, \qquad m_i \in \{0, 1\}$$

# %%
scores = torch.randn(2, 1, 5)  # (B, T, S): one query per sentence, 5 key slots
lengths = torch.tensor([5, 3])
mask = (torch.arange(5) < lengths[:, None]).unsqueeze(1)  # (B, 1, S)
masked = masked_softmax(scores, mask)
print(masked.squeeze(1))
fig, ax = plt.subplots(figsize=(5, 2))
plot_heatmap(masked.squeeze(1), output_tokens=["5 words", "3 words"], ax=ax, annotate=True)
plt.show()

# %% [markdown]
# ## What to look for
#
# * Each row of the attention matrix is a bump centred on its query: the diagonal band of the
#   heatmap. A narrow band is *sharp* attention (low entropy), a wide one *diffuse*.
# * The error curve is U-shaped in the width; the entropy only grows. Sharp is not always
#   better: the right width averages away the noise without blurring the function.
# * In the masked batch, the padded columns of the short sentence are exactly zero and its
#   three real weights still sum to one.
#
# ## Exercises
#
# 1. Fit the width of the Laplace kernel (`kr.fit_width(keys, values, "laplace")`). Is it
#    wider or narrower than the Gaussian's, and why?
# 2. Give each *key* its own width (a vector of $n$ widths). Does leave-one-out fitting still
#    work, or does it overfit? (Hint: `kr.kernel_weights` broadcasts a width tensor.)
# 3. Replace the distance score by a dot product $a(q, k) = q k$. What happens to the
#    attention of a query near 0? This is why Transformers *learn* their queries and keys.

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
assert torch.allclose(weights.sum(-1), torch.ones(len(queries)))  # weights are a distribution
# a learnt width beats the constant score, and the far too wide kernel
assert check("learnt width: test MSE / the constant's", fitted_mse / constant_mse, "<", 0.5)
assert check("learnt width: test MSE / the widest kernel's", fitted_mse / errors[-1], "<", 1.0)
assert errors.index(min(errors)) not in (0, len(widths) - 1)  # the best width is in between
assert entropies == sorted(entropies)  # wider kernels: more diffuse attention
assert (masked[1, 0, 3:] == 0).all() and torch.isclose(masked[1].sum(), torch.tensor(1.0))
