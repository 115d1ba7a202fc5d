"""The registry of attention implementations: a name -> a builder of an
:class:`~attnkit.attention.exact.AttentionImpl` (what ``model.attention_impl`` names).

=============  =======  =======================================================================
name           exact    memory in the length n / what it computes
=============  =======  =======================================================================
``explicit``   yes      n^2: softmax of the full score matrix (the reference, weights kept)
``sdpa``       yes      torch's ``F.scaled_dot_product_attention`` (n on kernels that tile)
``chunked``    yes      n: online softmax over key tiles, backward by recomputation
``local``      no       n: a window of half width ``window`` (+ ``global_tokens``), Longformer
``linear``     no       n: elu + 1 feature map, Katharopoulos et al. 2020
``performer``  no       n: FAVOR+ positive random features (``features``), Choromanski 2021
=============  =======  =======================================================================

"exact" means equal to ``explicit`` up to rounding (the tests hold it to 1e-5 in float32,
forward and gradients). The others compute another function; each gives the (B, H, T, S) matrix
it applies through ``implied_weights`` on short inputs, so that its maps can be drawn.

Shapes: Dh width per head.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnkit.attention.chunked import ChunkedAttention
from attnkit.attention.exact import AttentionImpl, ExplicitAttention, SdpaAttention
from attnkit.attention.kernelized import LinearAttention, PerformerAttention
from attnkit.attention.sliding import SlidingWindowAttention
from attnkit.errors import ConfigError


@dataclass(frozen=True)
class ImplOptions:
    """The knobs only some implementations read: ``local``'s half window and global tokens,
    ``performer``'s number of random features and their seed, ``chunked``'s tile width;
    ``strict``: ``local`` refuses an input no longer than its window."""

    window: int = 64
    global_tokens: int = 0
    features: int = 64
    seed: int = 0
    chunk: int = 128
    strict: bool = True


ImplBuilder = Callable[[int, ImplOptions], AttentionImpl]

#: name -> builder(head width Dh, options)
IMPLEMENTATIONS: dict[str, ImplBuilder] = {
    "explicit": lambda dh, o: ExplicitAttention(),
    "sdpa": lambda dh, o: SdpaAttention(),
    "chunked": lambda dh, o: ChunkedAttention(o.chunk),
    "local": lambda dh, o: SlidingWindowAttention(o.window, o.global_tokens, o.strict),
    "linear": lambda dh, o: LinearAttention(),
    "performer": lambda dh, o: PerformerAttention(dh, o.features, o.seed),
}


def build_implementation(
    name: str, head_dim: int, options: ImplOptions | None = None
) -> AttentionImpl:
    """The implementation ``name`` for heads of width ``head_dim``; ConfigError (one line, the
    known names listed) for an unknown one."""
    try:
        builder = IMPLEMENTATIONS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"model.attention_impl: unknown implementation {name!r}; known: "
            f"{', '.join(IMPLEMENTATIONS)}"
        ) from None
    return builder(head_dim, options or ImplOptions())
