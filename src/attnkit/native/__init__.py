"""Optional compiled CPU kernels, built on first use with the system's C compiler.

Today one kernel: the additive (Bahdanau, Luong concat) attention energies ``v . tanh(q + k)`` in one pass
(``additive.c``). On x86-64 CPUs with AVX2 and FMA it is built once per source version into a cache directory
and loaded with ctypes; everywhere else (no compiler, another CPU, CUDA tensors, float64) :func:`covers` is
False and :func:`additive_energies` returns None, and the caller computes the same thing with torch. Its
results agree with torch's to about 1e-6 (its tanh is a rational approximation, |error| < 3e-7). The kernel
has no autograd of its own: :func:`attnkit.attention.scores.additive_scores` wraps it in an autograd node, and
the handwritten teacher-forcing loop keeps the tanh it writes for its own backward.

Environment:
    ATTNKIT_NATIVE=0        never build or load the kernels (torch everywhere)
    ATTNKIT_CACHE_DIR       where the built library goes (default: $XDG_CACHE_HOME/attnkit or ~/.cache/attnkit)
    CC                      the C compiler, with any arguments (default: cc, then gcc, then clang)

The kernel's threads follow ``torch.get_num_threads()``. With gcc and a PyTorch built on libgomp (the PyPI
wheels for Linux) they are PyTorch's own OpenMP pool; another compiler's OpenMP runtime would keep a second
pool beside it. The kernel declines inside ``torch.compile`` (it is opaque to tracing) and for tensor
subclasses and ``torch.func`` transforms; its autograd node supports first-order gradients only.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import torch
from torch import Tensor

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("additive.c")
FLAGS = ["-O3", "-mavx2", "-mfma", "-shared", "-fPIC"]
OPENMP = "-fopenmp"  # tried first; a compiler without OpenMP still builds a one-thread kernel

_lock = threading.Lock()
_state: dict = {}  # "lib": the loaded library or None once tried
_switched_off = threading.local()


def enabled() -> bool:
    """Whether the kernels may be used on this machine (not switched off, x86-64 with AVX2)."""
    if os.environ.get("ATTNKIT_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: "")()
    return capability.startswith(("AVX2", "AVX512"))


def cache_dir() -> Path:
    explicit = os.environ.get("ATTNKIT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnkit"


def _compiler() -> list[str] | None:
    """The compiler command (CC may carry arguments, e.g. "ccache gcc"), or None."""
    if os.environ.get("CC", "").strip():
        return shlex.split(os.environ["CC"])
    found = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    return [found] if found else None


def _build(compiler: list[str], target: Path) -> None:
    """Compile ``SOURCE`` into ``target`` atomically (several processes may build at once)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        errors = []
        for extra in ([OPENMP], []):
            proc = subprocess.run([*compiler, *FLAGS, *extra, str(SOURCE), "-o", tmp], capture_output=True,
                                  text=True, timeout=120)
            if proc.returncode == 0:
                os.replace(tmp, target)
                return
            errors.append(proc.stderr.strip()[-500:])
        raise RuntimeError(f"{shlex.join(compiler)} could not build {SOURCE.name}: {errors[-1]}")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def library_path(compiler: list[str]) -> Path:
    """Where the library built by ``compiler`` from this version of the source lives."""
    key = hashlib.sha256(SOURCE.read_bytes() + " ".join([*compiler, *FLAGS]).encode()).hexdigest()[:16]
    return cache_dir() / f"additive-{key}.so"


def _load(path: Path) -> ctypes.CDLL:
    # Loaded after torch, so its OpenMP dependency resolves to the runtime torch already runs.
    lib = ctypes.CDLL(str(path))
    lib.attnkit_additive_energies.restype = None
    lib.attnkit_additive_energies.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_long] * 4 + [ctypes.c_int]
    return lib


def library() -> ctypes.CDLL | None:
    """The built kernel library, building it on first use; None where it cannot be had (reason logged once)."""
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
                target = library_path(compiler)
                if not target.exists():
                    _build(compiler, target)
                try:
                    lib = _load(target)
                except (OSError, AttributeError):  # a truncated or foreign file in the cache: build it again
                    _build(compiler, target)
                    lib = _load(target)
            except (OSError, RuntimeError, subprocess.SubprocessError, AttributeError) as err:
                log.info("attnkit native kernels unavailable, using torch: %s", err)
                lib = None
        _state["lib"] = lib
        return lib


@contextlib.contextmanager
def disabled():
    """Inside this block (in this thread) every kernel declines and torch computes everything: for side-by-side
    comparisons and tests."""
    before = getattr(_switched_off, "value", False)
    _switched_off.value = True
    try:
        yield
    finally:
        _switched_off.value = before


_PLAIN = (torch.Tensor, torch.nn.Parameter)
_is_functorch_wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", lambda x: False)


def _fits(x: Tensor) -> bool:
    """A plain, contiguous float32 CPU tensor (not a subclass, not wrapped by a torch.func transform)."""
    return (type(x) in _PLAIN and x.device.type == "cpu" and x.dtype == torch.float32 and x.is_contiguous()
            and not _is_functorch_wrapped(x))


def _tracing() -> bool:
    is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return bool(is_compiling and is_compiling())


def covers(query: Tensor, keys: Tensor, v: Tensor) -> bool:
    """Whether the kernel can compute these scores here: query (B, T, A), keys (B, S, A), v (A,), contiguous
    float32 CPU tensors, with the kernel built and not switched off. Autograd is the caller's affair."""
    if getattr(_switched_off, "value", False) or _tracing():
        return False
    if not (query.dim() == 3 and keys.dim() == 3 and v.dim() == 1):
        return False
    b, _, a = query.shape
    if keys.size(0) != b or keys.size(2) != a or v.numel() != a or query.numel() == 0 or keys.numel() == 0:
        return False
    return _fits(query) and _fits(keys) and _fits(v) and library() is not None


def additive_energies(query: Tensor, keys: Tensor, v: Tensor, hidden: Tensor | None = None) -> Tensor | None:
    """query (B, T, A), keys (B, S, A), v (A,) -> scores (B, T, S) = v . tanh(query + keys), or None where
    the kernel does not apply (see :func:`covers`; the caller then uses torch).

    ``hidden`` (B, T, S, A), when given, receives tanh(query + keys) (what a backward needs). Declines where
    autograd would have to see through it (grad mode on and an input requiring grad).
    """
    if not covers(query, keys, v):
        return None
    if torch.is_grad_enabled() and (query.requires_grad or keys.requires_grad or v.requires_grad):
        return None  # autograd would not see through the kernel
    b, t, a = query.shape
    if hidden is not None and not (_fits(hidden) and hidden.shape == (b, t, keys.size(1), a)):
        return None
    return run_additive_energies(query, keys, v, hidden)


def run_additive_energies(query: Tensor, keys: Tensor, v: Tensor, hidden: Tensor | None = None) -> Tensor:
    """The kernel call itself, checking nothing: for callers that have just checked :func:`covers` (and, for
    ``hidden``, its shape (B, T, S, A) and layout). Shapes as in :func:`additive_energies`."""
    b, t, a = query.shape
    s = keys.size(1)
    scores = query.new_empty(b, t, s)
    library().attnkit_additive_energies(query.data_ptr(), keys.data_ptr(), v.data_ptr(), scores.data_ptr(),
                                        None if hidden is None else hidden.data_ptr(), b, t, s, a,
                                        torch.get_num_threads())
    return scores
