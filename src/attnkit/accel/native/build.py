"""Building and caching the kernel library: the compiler call, the private cache directory and the
checks that a cached library is ours (owner, mode, recorded sha256) before it is loaded. See the
package docstring for the rules; :func:`attnkit.accel.native.library` is the entry point."""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
import warnings
from pathlib import Path

log = logging.getLogger("attnkit.accel.native")

HERE = Path(__file__).parent
SOURCES = [HERE / "additive.c", HERE / "recurrent.c", HERE / "dropout.c"]
HEADERS = [HERE / "fastmath.h"]
FLAGS = ["-O3", "-mavx2", "-mfma", "-shared", "-fPIC"]
OPENMP = "-fopenmp"  # tried first; a compiler without OpenMP still builds a one-thread kernel


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
    """Compile ``SOURCES`` into one library at ``target`` and record its sha256 beside it,
    atomically (several processes may build at once), in a private directory."""
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    try:
        errors = []
        for extra in ([OPENMP], []):
            proc = subprocess.run(
                [*compiler, *FLAGS, *extra, *map(str, SOURCES), "-o", tmp],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if proc.returncode == 0:
                os.chmod(tmp, 0o700)  # the linker may have created it anew with the umask's mode
                digest = _sha256(Path(tmp))
                os.replace(tmp, target)
                _write_private(_record(target), digest + "\n")
                return
            errors.append(proc.stderr.strip()[-500:])
        names = " ".join(p.name for p in SOURCES)
        raise RuntimeError(f"{shlex.join(compiler)} could not build {names}: {errors[-1]}")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, as a file only its owner may read or write."""
    fd, tmp = tempfile.mkstemp(dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record(target: Path) -> Path:
    """Where the sha256 of the library at ``target`` is recorded."""
    return target.with_name(target.name + ".sha256")


def library_name(compiler: list[str]) -> str:
    """The file name of the library built by ``compiler`` from this version of the sources."""
    digest = hashlib.sha256(" ".join([*compiler, *FLAGS]).encode())
    for path in [*SOURCES, *HEADERS]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"kernels-{digest.hexdigest()[:16]}.so"


def library_path(compiler: list[str]) -> Path:
    """Where the library built by ``compiler`` from this version of the sources is cached."""
    return cache_dir() / library_name(compiler)


def distrust(st: os.stat_result, uid: int) -> str | None:
    """Why a file or directory with status ``st`` is not to be trusted by the user ``uid`` (it
    belongs to another user, or a group or other users may write it), or None where it may be."""
    if st.st_uid != uid:
        return f"owned by uid {st.st_uid}, not by uid {uid}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _private_cache() -> tuple[Path, str | None]:
    """The cache directory, created with mode 0700 if missing, and why it is refused (or None)."""
    path = cache_dir()
    if not hasattr(os, "geteuid"):
        return path, "of unknown ownership (no POSIX owners here)"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700)
        os.chmod(path, 0o700)  # whatever the umask
    except FileExistsError:
        pass
    except OSError as err:
        return path, f"not creatable ({err.strerror or err})"
    try:
        st = os.stat(path)
    except OSError as err:
        return path, f"unreadable ({err.strerror or err})"
    if not stat.S_ISDIR(st.st_mode):
        return path, "not a directory"
    return path, distrust(st, os.geteuid())


def _doubt(target: Path) -> str | None:
    """Why the cached library at ``target`` is not to be loaded, or None: it or its record is
    missing, or not a regular file of this user's that only this user may write, or its bytes are
    not those recorded."""
    for path in (target, _record(target)):
        try:
            st = os.lstat(path)  # a symbolic link is not followed: it is refused
        except FileNotFoundError:
            return f"{path.name} is missing"
        if not stat.S_ISREG(st.st_mode):
            return f"{path} is not a regular file"
        why = distrust(st, os.geteuid())
        if why:
            return f"{path} is {why}"
    if _record(target).read_bytes().strip() != _sha256(target).encode():  # bytes: any content
        return f"{target} does not match its recorded sha256"
    return None


def _load(path: Path) -> ctypes.CDLL:
    # Loaded after torch, so its OpenMP dependency resolves to the runtime torch already runs.
    lib = ctypes.CDLL(str(path))
    ptr, size, c_int = ctypes.c_void_p, ctypes.c_long, ctypes.c_int
    rows = [ptr, size, size]  # a stack of rows: data, direction stride, batch stride
    signatures = {
        "attnkit_additive_energies": [ptr] * 5 + [size] * 4 + [c_int],
        "attnkit_additive_backward": [ptr] * 5 + [size] * 3 + [c_int],
        "attnkit_gru_forward": rows * 6 + [size] * 3 + [c_int],
        "attnkit_gru_backward": rows * 7 + [size] * 3 + [c_int],
        "attnkit_keep_mask": [ptr, size, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_float, c_int],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)  # AttributeError: an older or foreign library, built again
        function.restype = None
        function.argtypes = argtypes
    return lib


def _obtain(compiler: list[str]) -> ctypes.CDLL:
    """The library from the private cache, built there where missing or in doubt; where the cache
    is refused (or still in doubt after building), one built and loaded in a private temporary
    directory."""
    directory, refused = _private_cache()
    if refused is None:
        target = directory / library_name(compiler)
        doubt = _doubt(target)
        if doubt is not None:
            log.info("attnkit native kernels: building %s (%s)", target.name, doubt)
            _build(compiler, target)
            doubt = _doubt(target)
        if doubt is None:
            try:
                return _load(target)
            except (OSError, AttributeError) as err:  # consistent but not loadable: build privately
                doubt = str(err)
        log.info("attnkit native kernels: not loading %s: %s", target, doubt)
    else:
        warnings.warn(
            f"native kernels: the cache directory {directory} is {refused}; building "
            "them in a private temporary directory (give it mode 700 and to this user, "
            "or set ATTNKIT_CACHE_DIR, to cache them)",
            stacklevel=2,
        )
    with tempfile.TemporaryDirectory(prefix="attnkit-kernels-") as tmp:  # created 0700
        target = Path(tmp) / library_name(compiler)
        _build(compiler, target)
        return _load(target)  # the mapping outlives the file
