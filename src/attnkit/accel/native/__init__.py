"""Optional compiled CPU kernels, built on first use with the system's C compiler.

The kernels, each computing what a chain of small torch kernels computes, in one pass:

* ``additive.c``: the additive (Bahdanau, Luong concat) attention energies ``v . tanh(q + k)``, and
  one decoding step's backward through them;
* ``recurrent.c``: the gate arithmetic of one GRU step, forward and backward (the matmuls stay with
  torch);
* ``dropout.c``: inverted-dropout keep masks from a counter-based hash.

On x86-64 CPUs with AVX2 and FMA they are built once per source version into a cache directory (one
library) and loaded with ctypes; everywhere else (no compiler, another CPU, CUDA tensors, float64)
the ``covers``/``fits_rows`` checks are False and the callers compute the same thing with torch.
The kernels are opt-in: they decline too outside :func:`allowed`, the scope that a backend allowing
them opens around a model's call.
Results agree with torch's to about 1e-6: tanh and sigmoid are rational approximations
(``fastmath.h``, |error| < 3e-7). The kernels have no autograd of their own:
:mod:`attnkit.accel.kernel_scores` wraps the energies in an autograd node, and the
handwritten-backward loops (``attnkit.accel.loops``, ``attnkit.accel.recurrence``) call the rest
from their own forward and backward.

Environment:
    ATTNKIT_NATIVE=0        never build or load the kernels (torch everywhere)
    ATTNKIT_CACHE_DIR       where the built library goes (default: $XDG_CACHE_HOME/attnkit or
                            ~/.cache/attnkit)
    CC                      the C compiler, with any arguments (default: cc, then gcc, then clang)

The cache is trusted only as far as it is private: the directory is created with mode 0700, and
neither it nor a cached library is used unless it belongs to the current user and no group or other
user may write it. A library is loaded only if its bytes match the sha256 recorded beside it when it
was built (``kernels-<hash>.so.sha256``); otherwise it is built again. Where the directory itself is
refused (a warning says why), the library is built in a private temporary directory, loaded from
there and removed.

The kernels' threads follow ``torch.get_num_threads()``. With gcc and a PyTorch built on libgomp
(the PyPI wheels for Linux) they are PyTorch's own OpenMP pool; another compiler's OpenMP runtime
would keep a second pool beside it. The kernels decline inside ``torch.compile`` (they are opaque to
tracing) and for tensor subclasses and ``torch.func`` transforms.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import subprocess
import threading

import torch
from torch import Tensor

from attnkit.accel.native.build import (  # noqa: F401 - part of this package's interface
    _compiler,
    _doubt,
    _obtain,
    cache_dir,
    distrust,
    library_name,
    library_path,
)
from attnkit.attention import overrides

log = logging.getLogger(__name__)


_lock = threading.Lock()
_state: dict = {}  # "lib": the loaded library or None once tried


def enabled() -> bool:
    """Whether the kernels may be used on this machine (not switched off, x86-64 with AVX2)."""
    return _not_enabled() is None


def _not_enabled() -> str | None:
    """Why the kernels may not be used on this machine, or None where they may."""
    if os.environ.get("ATTNKIT_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return "switched off by ATTNKIT_NATIVE=0"
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"not an x86-64 CPU ({platform.machine()})"
    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: "")()
    if not capability.startswith(("AVX2", "AVX512")):
        return f"the CPU lacks AVX2 (torch reports {capability or 'nothing'})"
    return None


def unavailable() -> str | None:
    """Why the kernels cannot be had here (switched off, another CPU, no compiler, a failed
    build), or None where :func:`library` gives them; builds them on first use."""
    why = _not_enabled()
    if why is not None:
        return why
    if library() is None:
        return _state.get("why", "they could not be built")
    return None


def library() -> ctypes.CDLL | None:
    """The built kernel library, building it on first use; None where it cannot be had
    (reason logged once)."""
    if "lib" in _state:
        return _state["lib"]
    with _lock:
        if "lib" in _state:
            return _state["lib"]
        lib = None
        if enabled():
            compiler = _compiler()
            try:
                if compiler is None:
                    raise RuntimeError("no C compiler found (set CC)")
                lib = _obtain(compiler)
            except (OSError, RuntimeError, subprocess.SubprocessError, AttributeError) as err:
                log.info("attnkit native kernels unavailable, using torch: %s", err)
                _state["why"] = str(err).splitlines()[0] if str(err) else type(err).__name__
                lib = None
        _state["lib"] = lib
        return lib


def allowed():
    """A block (in this thread) in which the kernels may run: what a backend allowing them opens
    around a model's call (:meth:`attnkit.accel.backend.Backend.scope`). Outside one, every kernel
    declines: they are opt-in."""
    return overrides.allowing(True)


def disabled():
    """A block (in this thread) in which every kernel declines and torch computes everything,
    whatever a model's backend allows: for side-by-side comparisons and tests."""
    return overrides.switched_off()


_PLAIN = (torch.Tensor, torch.nn.Parameter)
_is_functorch_wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", lambda x: False)


def _plain_float32_cpu(x: Tensor) -> bool:
    """A float32 CPU tensor that is not a subclass and not wrapped by a torch.func transform."""
    return (
        type(x) in _PLAIN
        and x.device.type == "cpu"
        and x.dtype == torch.float32
        and not _is_functorch_wrapped(x)
    )


def _fits(x: Tensor) -> bool:
    """A plain, contiguous float32 CPU tensor."""
    return _plain_float32_cpu(x) and x.is_contiguous()


def _tracing() -> bool:
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return bool(is_compiling and is_compiling())


def _declining() -> bool:
    """Outside :func:`allowed`, inside :func:`disabled` or while torch.compile traces: every kernel
    declines."""
    return not overrides.kernels_allowed() or _tracing()


def covers(query: Tensor, keys: Tensor, v: Tensor) -> bool:
    """Whether the kernel can compute these scores here: query (B, T, A), keys (B, S, A), v (A,),
    contiguous float32 CPU tensors, with the kernel built and not switched off. Autograd is the
    caller's affair."""
    if _declining():
        return False
    if not (query.dim() == 3 and keys.dim() == 3 and v.dim() == 1):
        return False
    b, _, a = query.shape
    if (
        keys.size(0) != b
        or keys.size(2) != a
        or v.numel() != a
        or query.numel() == 0
        or keys.numel() == 0
    ):
        return False
    return _fits(query) and _fits(keys) and _fits(v) and library() is not None


def additive_energies(
    query: Tensor, keys: Tensor, v: Tensor, hidden: Tensor | None = None
) -> Tensor | None:
    """query (B, T, A), keys (B, S, A), v (A,) -> scores (B, T, S) = v . tanh(query + keys), or None
    where the kernel does not apply (see :func:`covers`; the caller then uses torch).

    ``hidden`` (B, T, S, A), when given, receives tanh(query + keys) (what a backward needs).
    Declines where autograd would have to see through it (grad mode on and an input requiring grad).
    """
    if not covers(query, keys, v):
        return None
    if torch.is_grad_enabled() and (query.requires_grad or keys.requires_grad or v.requires_grad):
        return None  # autograd would not see through the kernel
    b, t, a = query.shape
    if hidden is not None and not (_fits(hidden) and hidden.shape == (b, t, keys.size(1), a)):
        return None
    return run_additive_energies(query, keys, v, hidden)


def run_additive_energies(
    query: Tensor, keys: Tensor, v: Tensor, hidden: Tensor | None = None
) -> Tensor:
    """The kernel call itself, checking nothing: for callers that have just checked :func:`covers`
    (and, for ``hidden``, its shape (B, T, S, A) and layout). Shapes as in
    :func:`additive_energies`."""
    b, t, a = query.shape
    s = keys.size(1)
    scores = query.new_empty(b, t, s)
    library().attnkit_additive_energies(
        query.data_ptr(),
        keys.data_ptr(),
        v.data_ptr(),
        scores.data_ptr(),
        None if hidden is None else hidden.data_ptr(),
        b,
        t,
        s,
        a,
        torch.get_num_threads(),
    )
    return scores


def run_additive_backward(
    d_scores: Tensor, hidden: Tensor, v: Tensor, d_keys: Tensor, d_query: Tensor
) -> None:
    """One step's backward through the energies, checking nothing (the caller has checked
    :func:`covers` for the forward): d_scores (B, S), hidden (B, S, A) the kept tanh, v (A,) -> adds
    d e to d_keys (B, S, A) and writes sum_s d e into d_query (B, A); all contiguous float32."""
    b, s, a = hidden.shape
    library().attnkit_additive_backward(
        d_scores.data_ptr(),
        hidden.data_ptr(),
        v.data_ptr(),
        d_keys.data_ptr(),
        d_query.data_ptr(),
        b,
        s,
        a,
        torch.get_num_threads(),
    )


def fits_rows(*tensors: Tensor) -> bool:
    """Whether the row kernels (GRU steps) can take these tensors here: plain float32 CPU tensors of
    1 dim (X,), 2 (B, X) or 3 (D, B, X), each row contiguous, with the kernels built and not
    switched off."""
    if _declining():
        return False
    if not all(
        _plain_float32_cpu(x) and x.dim() in (1, 2, 3) and x.stride(-1) == 1 for x in tensors
    ):
        return False
    return library() is not None


def _rows(x: Tensor) -> tuple[int, int, int]:
    """(data, direction stride, row stride) of a (B, X) or (D, B, X) stack of rows."""
    if x.dim() == 2:
        return x.data_ptr(), 0, x.stride(0)
    return x.data_ptr(), x.stride(0), x.stride(1)


def run_gru_forward(
    gates_x: Tensor,
    gates_h: Tensor,
    h_prev: Tensor,
    gates: Tensor,
    h_out: Tensor,
    hidden_bias: Tensor | None = None,
) -> None:
    """One GRU step's gate arithmetic (see ``recurrent.c``), checking nothing (the caller has
    checked :func:`fits_rows` on tensors of this layout): gates_x, gates_h (..., 3H), h_prev
    (..., H) -> the activated gates (..., 3H) and the new state h_out (..., H). ``...`` is (B,) or
    (D, B), the same for all. ``hidden_bias`` (3H,) or (D, 3H), contiguous: b_hh, added into gates_h
    in place first (gates_h then comes without it)."""
    *lead, hidden = h_out.shape
    dirs, batch = (1, *lead) if len(lead) == 1 else lead
    if hidden_bias is None:
        bias = (None, 0, 0)
    else:  # the same bias row for every batch row
        bias = (hidden_bias.data_ptr(), hidden_bias.stride(0) if hidden_bias.dim() == 2 else 0, 0)
    library().attnkit_gru_forward(
        *_rows(gates_x),
        *_rows(gates_h),
        *bias,
        *_rows(h_prev),
        *_rows(gates),
        *_rows(h_out),
        dirs,
        batch,
        hidden,
        torch.get_num_threads(),
    )


def run_gru_backward(
    d_h: Tensor,
    gates: Tensor,
    gates_h: Tensor,
    h_prev: Tensor,
    d_gates_x: Tensor,
    d_gates_h: Tensor,
    direct: Tensor,
) -> None:
    """Backward of :func:`run_gru_forward` given d_h (..., H) with respect to the new state: writes
    the input and hidden gate gradients (..., 3H) and ``direct`` = d_h z (..., H), the part of d
    h_prev that does not go through W_hh. Checks nothing."""
    *lead, hidden = d_h.shape
    dirs, batch = (1, *lead) if len(lead) == 1 else lead
    library().attnkit_gru_backward(
        *_rows(d_h),
        *_rows(gates),
        *_rows(gates_h),
        *_rows(h_prev),
        *_rows(d_gates_x),
        *_rows(d_gates_h),
        *_rows(direct),
        dirs,
        batch,
        hidden,
        torch.get_num_threads(),
    )


_MASK_BITS = 2**31


def keep_mask(shape: tuple[int, ...], p: float) -> Tensor | None:
    """A float32 CPU inverted-dropout mask of ``shape`` (0 with probability p, else the exact
    inverse of the keep probability), or None where the kernel is not to be had. Its seed is drawn
    from torch's default generator, so ``torch.manual_seed`` fixes the mask; thresholds are on 31
    random bits, as :func:`attnkit.accel.dropout.keep_mask` draws them with torch."""
    if _declining() or library() is None:
        return None
    threshold = round(p * _MASK_BITS)
    seed = int(torch.randint(-(2**63), 2**63 - 1, (), dtype=torch.int64)) & (2**64 - 1)
    mask = torch.empty(shape)
    library().attnkit_keep_mask(
        mask.data_ptr(),
        mask.numel(),
        seed,
        threshold,
        _MASK_BITS / (_MASK_BITS - threshold),
        torch.get_num_threads(),
    )
    return mask
