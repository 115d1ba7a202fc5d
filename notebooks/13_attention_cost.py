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
# # Lesson 13: what attention costs
#
# Every query scores every key: for a sequence of $n$ positions self-attention computes an
# $n \times n$ matrix of weights, in every head of every layer. Time and memory grow as $n^2$,
# and memory is the wall one meets first. This lesson measures that wall live, then takes apart
# the trick that moves it without changing a single output (FlashAttention's *online softmax*,
# attnkit's `chunked`), and looks at three attentions that compute something else to pay less:
# a sliding window (`local`), a feature map (`linear`) and random features (`performer`), with
# their maps beside the exact one.
#
# Quick mode (the default) measures lengths up to 1,024 (seconds); `QUICK=0` goes to 4,096.
# For the full curves, run `python benchmarks/attention_cost.py` (time and peak memory per
# implementation, the machine's limit measured in the same run).

# %%
import math
import time

import matplotlib.pyplot as plt
import torch

from attnkit.attention import IMPLEMENTATIONS, ImplOptions, build_implementation
from attnkit.attention.scores import masked_softmax, scaled_dot_scores
from attnkit.errors import ConfigError
from attnkit.lessons.checks import check
from attnkit.lessons.mode import pick, seed
from attnkit.viz import plot_heatmap

torch.manual_seed(seed())  # 0 unless the environment variable SEED says otherwise
torch.set_num_threads(1)
print("implementations:", ", ".join(IMPLEMENTATIONS))

# %% [markdown]
# ## The $n^2$ wall, measured
#
# What autograd keeps for the backward pass is the memory a training step cannot avoid. The
# hooks below add up the bytes of every tensor saved for the backward while one attention runs
# (one sequence, 4 heads of width 32), for each length. The explicit attention saves its
# $n \times n$ weights; the others do not.


# %%
def saved_bytes(impl, n, heads=4, dim=32):
    """Bytes of the tensors autograd saves for the backward of one self-attention of length n."""
    q, k, v = (torch.randn(1, heads, n, dim, requires_grad=True) for _ in range(3))
    total = 0
    seen = set()

    def pack(t):
        nonlocal total
        key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        if key not in seen:  # a storage saved twice is held once
            seen.add(key)
            total += key[1]
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        impl(q, k, v)
    return total


def seconds(impl, n, heads=4, dim=32, repeats=3):
    """Median time of a forward and backward of one self-attention of length n."""
    q, k, v = (torch.randn(1, heads, n, dim, requires_grad=True) for _ in range(3))
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        impl(q, k, v).sum().backward()
        times.append(time.perf_counter() - start)
    return sorted(times[1:])[len(times[1:]) // 2]


lengths = pick([128, 256, 512, 1024], [128, 256, 512, 1024, 2048, 4096])
options = ImplOptions(window=32, features=64)
names = ["explicit", "chunked", "local", "linear", "performer"]
impls = {name: build_implementation(name, 32, options) for name in names}
memory = {name: [saved_bytes(impls[name], n) for n in lengths] for name in names}
times = {name: [seconds(impls[name], n) for n in lengths] for name in names}


def slope(values):
    """The least-squares slope of log(value) on log(n): the exponent of the growth."""
    xs = [math.log(n) for n in lengths]
    ys = [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
for name in names:
    left.loglog(
        lengths, memory[name], marker="o", label=f"{name} (slope {slope(memory[name]):.2f})"
    )
    right.loglog(lengths, times[name], marker="o", label=f"{name} (slope {slope(times[name]):.2f})")
for axis in (left, right):
    axis.set_xscale("log", base=2)
left.set(xlabel="length n", ylabel="bytes saved for the backward", title="memory")
right.set(xlabel="length n", ylabel="seconds, forward + backward", title="time")
left.legend(fontsize=8)
right.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown]
# The slopes are the exponents: explicit's memory grows as $n^{2}$ (its slope nears 2 from below:
# q, k and v, saved as well, grow as $n$), everything else's as $n$.
# At the lengths of a laptop the times are closer than the memory: the explicit path is a few
# large matrix products, which a CPU runs near its peak, while `chunked` runs a Python loop over
# tiles. The wall is memory. Ask `explicit` for a length it cannot hold and it refuses before
# allocating anything (a *meta* tensor has a shape and no storage):

# %%
huge = torch.empty(1, 8, 2**20, 64, device="meta")  # a million positions, 8 heads
try:
    impls["explicit"](huge, huge, huge)
except ConfigError as error:
    refusal = str(error)
print(refusal)

# %% [markdown]
# ## Online softmax, step by step
#
# The softmax of one row of scores $s_1 \dots s_n$ needs its maximum (for range) and its sum
# before any weight is known, which seems to need the whole row at once. It does not. Read the
# scores in tiles, keep a running maximum $m$, a running sum $\ell$ of $e^{s - m}$ and a running
# weighted sum $o$ of the values, and rescale what was summed whenever the maximum grows:
#
# $$m_j = \max(m_{j-1}, \max_{k \in j} s_k), \quad
# \ell_j = \ell_{j-1} e^{m_{j-1} - m_j} + \sum_{k \in j} e^{s_k - m_j}, \quad
# o_j = o_{j-1} e^{m_{j-1} - m_j} + \sum_{k \in j} e^{s_k - m_j} v_k$$
#
# and the output is $o / \ell$: exact, with one tile in memory at a time (Milakov & Gimelshein
# 2018; FlashAttention, Dao et al. 2022, runs it on a GPU's fast memory).

# %%
g = torch.Generator().manual_seed(seed())
scores = torch.randn(12, generator=g) * 2 + torch.linspace(0, 6, 12)  # later keys score higher
values = torch.randn(12, 2, generator=g)  # the keys' values (width 2)
m, total, out = -math.inf, 0.0, torch.zeros(2)
running = []  # the running maximum after each tile
for start in range(0, 12, 4):  # three tiles of four keys
    tile = scores[start : start + 4]
    new_m = max(m, tile.max().item())
    rescale = math.exp(m - new_m)  # 0 on the first tile
    total = total * rescale + torch.exp(tile - new_m).sum().item()
    out = out * rescale + torch.exp(tile - new_m) @ values[start : start + 4]
    print(f"tile {start // 4}: max {new_m:6.3f}, earlier sums x {rescale:.4f}, sum {total:7.4f}")
    m = new_m
    running.append(m)
online = out / total
exact = torch.softmax(scores, 0) @ values
print("online:", online.tolist(), "\nexact: ", exact.tolist())
fig, ax = plt.subplots(figsize=(7, 3))
ax.bar(range(12), scores, color=[f"C{i // 4}" for i in range(12)])
ax.step(
    [-0.5, 3.5, 7.5, 11.5], [*running, running[-1]], where="post", color="k", label="running max"
)
ax.set(xlabel="key (coloured by tile)", ylabel="score", title="one row of scores, read in tiles")
ax.legend()
plt.show()

# %% [markdown]
# `chunked` is this loop over tiles of keys, for every query row and head at once, and its
# backward recomputes each tile's weights from the saved $\log \ell + m$ instead of keeping them.
# On a real input its output and gradients equal the explicit ones:

# %%
q, k, v = (torch.randn(2, 4, 300, 32, requires_grad=True) for _ in range(3))
key_mask = torch.ones(2, 300, dtype=torch.bool)
key_mask[1, 250:] = False  # the second sequence is padded
results = {}
for name in ("explicit", "chunked"):
    out = impls[name](q, k, v, key_mask, causal=True)
    results[name] = (out, *torch.autograd.grad(out.square().sum(), (q, k, v)))
# the largest difference of each tensor, relative to its largest entry
difference = max(
    ((a - b).abs().max() / b.abs().max()).item()
    for a, b in zip(results["explicit"], results["chunked"])
)
print(f"largest relative difference, output and gradients: {difference:.2e}")

# %% [markdown]
# ## What the approximations look like
#
# `local`, `linear` and `performer` are not softmax over all keys: each implies its own
# $n \times n$ matrix, which `implied_weights` builds on a short input, so it can be drawn beside
# the exact one. A window of 3 positions either side keeps only a band (plus a global first
# token); `linear` replaces $e^{q \cdot k}$ by $\phi(q) \cdot \phi(k)$ with
# $\phi = \mathrm{elu} + 1$, a flatter map; `performer` estimates $e^{q \cdot k / \sqrt{d}}$
# with random features, better with more of them.

# %%
n = 24
positions = torch.arange(n, dtype=torch.float32)
# queries and keys that prefer nearby positions (as many trained heads do), plus noise
basis = torch.stack([torch.sin(positions / 3), torch.cos(positions / 3)], -1) * 4
qs = torch.cat([basis, 0.3 * torch.randn(n, 14, generator=g)], -1)[None, None]  # (1, 1, n, 16)
ks = torch.cat([basis, 0.3 * torch.randn(n, 14, generator=g)], -1)[None, None]
maps = {"explicit": masked_softmax(scaled_dot_scores(qs, ks), None)[0, 0]}
for name, opts in [
    ("local", ImplOptions(window=3, global_tokens=1)),
    ("linear", ImplOptions()),
    ("performer", ImplOptions(features=16)),
    ("performer", ImplOptions(features=1024)),
]:
    impl = build_implementation(name, 16, opts)
    label = name if name != "performer" else f"performer, {opts.features} features"
    maps[label] = impl.implied_weights(qs, ks)[0, 0]
fig, axes = plt.subplots(1, len(maps), figsize=(4 * len(maps), 3.6))
for ax, (label, weights) in zip(axes, maps.items()):
    plot_heatmap(
        weights, [str(i) for i in range(n)], [str(i) for i in range(n)], ax=ax, title=label
    )
plt.tight_layout()
plt.show()
error = {label: (w - maps["explicit"]).abs().sum(-1).mean().item() for label, w in maps.items()}
for label, value in error.items():
    print(f"{label:28s} distance from the exact map (mean L1 per row): {value:.3f}")

# %% [markdown]
# ## What to look for
#
# - Memory, not time, is the wall on a CPU at these lengths: explicit's saved bytes grow with
#   slope 2, everything else's with slope 1.
# - Online softmax gives the same numbers as softmax (to rounding), in any tile size: the
#   running maximum only keeps the exponentials in range.
# - The approximations are different functions. `local` is exact inside its band and blind
#   outside it; `linear` is flatter than softmax; `performer` is an estimate of softmax whose
#   map approaches the exact one as its features grow (and costs more with them).
#
# ## Exercises
#
# 1. Change the tile width of the online softmax loop (2, 3, 12). Does the result change?
# 2. Double `heads` in `saved_bytes`: by how much does each curve move up?
# 3. With `performer`, plot the distance from the exact map against the number of features
#    (16 to 4,096): what power of the features does it fall with?
# 4. Train `configs/numbers_transformer.yaml --set model.attention_impl=local --set
#    model.attention_window=4`: how much accuracy does a window cost on this task?

# %% [markdown]
# ## Checks (run in CI: the facts this lesson teaches)

# %%
# q, k and v (saved too) grow as n, so the slope nears 2 from below as n grows
assert check("explicit: slope of saved memory", slope(memory["explicit"]), ">", 1.7)
for name in ("chunked", "local", "linear", "performer"):
    assert check(f"{name}: slope of saved memory", slope(memory[name]), "<", 1.2)
assert "chunked or local" in refusal and "\n" not in refusal  # one line, naming the way out
assert torch.allclose(online, exact, atol=1e-6)  # online softmax is softmax
assert check("chunked against explicit: relative difference", difference, "<", 1e-5, digits=8)
features_error = error["performer, 16 features"], error["performer, 1024 features"]
assert check(
    "performer: distance, 1024 features / 16 features",
    features_error[1] / features_error[0],
    "<",
    0.5,
)
assert (maps["local"][10, 15:] == 0).all() and maps["local"][10, 0] > 0  # band and global token
