"""One process that imports torch and attnkit once, then forks a child for each command of the
fault harness (benchmarks/faults.py): a case pays for its own work, not for 3-4 CPU seconds of
imports (``import torch`` alone is ~2.8 s of CPU on the 2-core machine).

Each command is still a process of its own, with its own exit status, stdout and stderr, working
directory, stdin, time limit (:class:`Budget`: CPU seconds of its process group, and a guard
against a command that blocks; the whole group is killed) and, where asked, address-space cap;
its peak RSS and CPU seconds come from ``wait4`` (the RSS counts the pages it shares with the
zygote, as a fresh interpreter's counts its imports). Only commands run with the harness's
own environment come here; one with another environment (a planted kernel cache, another
``HOME``) or run as another user starts a fresh interpreter as before, since imports may read it.

The zygote is single-threaded (forking a threaded process is unsafe): the harness's threads send
it one request per connection over a Unix socket; it forks a *keeper* per request, which forks
the command, waits for it and sends the result back, so commands run side by side.

    zygote = Zygote(env, Path("/tmp/x/zygote.sock"))
    out = zygote.run(["evaluate", "--model", "ckpt"], cwd, stdin=b"", timeout=60, cap=3 << 30)
    out["rc"], out["stdout"], out["stderr"], out["rss_kb"], out["cpu_s"]
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: a command that gains no CPU for this many seconds of wall time is blocked (a FIFO, a lock, a
#: peer that never answers): given up on, whatever CPU it has left
STALL_S = 30.0
_TICK = os.sysconf("SC_CLK_TCK")


def group_cpu(pgid: int) -> float:
    """CPU seconds (user + system, and those of the children each has waited for) of every
    live process in process group ``pgid`` (Linux ``/proc``)."""
    ticks = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # ended meanwhile
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # from field 3 (state) on
        if int(fields[2]) == pgid:  # field 5: the process group
            ticks += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / _TICK


class Budget:
    """When to give up on a command whose processes make up group ``pgid``: past ``cpu_s``
    seconds of CPU, or once the group has gained no CPU for ``stall_s`` seconds of wall time.

    Not on wall time alone: on a shared machine a command that waits for a core is slow, not
    hung, and a limit in wall seconds measures the machine's load, not the command. What a case
    bounds is the work (CPU) and that nothing blocks (the stall guard).
    """

    def __init__(self, pgid: int, cpu_s: float, stall_s: float = STALL_S, every: float = 0.5):
        self.pgid, self.cpu_s, self.stall_s, self.every = pgid, cpu_s, stall_s, every
        self.used, self.moved, self._next = 0.0, time.time(), 0.0

    def exceeded(self) -> str | None:
        """Why the command is over its budget (looked at every ``every`` s), else None."""
        now = time.time()
        if now < self._next:
            return None
        self._next = now + self.every
        used = group_cpu(self.pgid)
        if used > self.used:
            self.used, self.moved = used, now
        if self.used > self.cpu_s:
            return f"ran past {self.cpu_s:g} s of CPU"
        if now - self.moved > self.stall_s:
            return f"gained no CPU for {self.stall_s:g} s: blocked"
        return None


#: imported once by the zygote: what nearly every command imports (every family's model class,
#: the plotting library ``plot`` and every report draw with)
PRELOAD = """
import torch, numpy, yaml, safetensors
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot
import attnkit.cli, attnkit.cli.options
from attnkit.families import FAMILIES
for family in FAMILIES.values():
    family.model_class()
    family.resolve(family.cli)
"""


def _send(sock: socket.socket, data: dict) -> None:
    body = json.dumps(data).encode("utf-8")
    sock.sendall(struct.pack(">Q", len(body)) + body)


def _receive(sock: socket.socket) -> dict:
    def exactly(n: int) -> bytes:
        chunks = []
        while n:
            chunk = sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("the zygote closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    (size,) = struct.unpack(">Q", exactly(8))
    return json.loads(exactly(size))


class Zygote:
    """The client side: starts the zygote process, sends it commands."""

    def __init__(self, env: dict, path: Path):
        self.path, self.env = path, env
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(path)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        line = self.proc.stdout.readline().decode().strip()
        if line != "ready":
            err = self.proc.stderr.read().decode("utf-8", "replace")[-500:]
            raise RuntimeError(f"the zygote did not start: {line} {err}")

    def run(
        self,
        args: list,
        cwd: Path,
        stdin: bytes | str | None = None,
        timeout: float = 120,
        cap: int | None = None,
        script: str | None = None,
        stall: float = STALL_S,
    ) -> dict:
        """``attnkit args`` (or ``script`` run as ``__main__`` with ``args`` as its argv) in
        ``cwd``; ``stdin``: bytes, a file's path, or None (empty); ``timeout``: CPU seconds and
        ``stall``: wall seconds without CPU (:class:`Budget`); ``cap``: RLIMIT_AS bytes."""
        request = {  # bytes (an argument no UTF-8) as Python decodes a fresh process's argv
            "args": [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args],
            "cwd": str(cwd),
            "timeout": timeout,
            "stall": stall,
            "cap": cap,
            "script": script,
        }
        with tempfile.TemporaryDirectory(prefix="zygote-") as tmp:
            if isinstance(stdin, bytes):
                Path(tmp, "stdin").write_bytes(stdin)
                request["stdin"] = str(Path(tmp, "stdin"))
            else:
                request["stdin"] = stdin
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(str(self.path))
                _send(sock, request)
                return _receive(sock)

    def close(self) -> None:
        """Stop the zygote once its keepers are done (their CPU time is counted in its
        children's, so ``time python benchmarks/faults.py`` sees every command's)."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---- the zygote process --------------------------------------------------------------------
def _serve(path: str) -> None:
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p != here]  # benchmarks/ is no command's path
    exec(PRELOAD, {})
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, _reap)  # keepers are waited for: their CPU counts in ours
    signal.signal(signal.SIGTERM, _stop)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        conn, _ = listener.accept()
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                _keep(conn)
            except BaseException:  # noqa: BLE001 - said on the zygote's stderr, then gone
                import traceback

                traceback.print_exc()
                sys.stderr.flush()
            finally:
                os._exit(0)
        conn.close()


def _reap(*_) -> None:
    """Wait for every keeper that has ended (none blocks)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _stop(*_) -> None:
    """Wait for the keepers still running, then end."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        while True:
            os.wait()
    except ChildProcessError:
        os._exit(0)


def _keep(conn: socket.socket) -> None:
    """Fork the command, wait for it (killing its group past its :class:`Budget`), send the
    result."""
    import shutil

    request = _receive(conn)
    # no TemporaryDirectory: its finalizer is an exit function, which the command runs at exit
    tmp = tempfile.mkdtemp(prefix="zygote-out-")
    try:
        out, err = Path(tmp, "out"), Path(tmp, "err")
        t0 = time.time()
        pid = os.fork()
        if pid == 0:
            try:
                _child(request, out, err)
            except BaseException:  # noqa: BLE001 - the setup failed: said in its stderr
                import traceback

                with open(err, "a", encoding="utf-8") as f:
                    f.write(traceback.format_exc())
            finally:
                os._exit(1)  # never back into the keeper's frames
        budget = Budget(pid, float(request["timeout"]), float(request.get("stall", STALL_S)))
        timed_out = None
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if timed_out := budget.exceeded():
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, status, usage = os.wait4(pid, 0)
                break
            time.sleep(0.005)
        rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        stdout = out.read_bytes().decode("utf-8", "replace") if out.exists() else ""
        stderr = err.read_bytes().decode("utf-8", "replace") if err.exists() else ""
        _send(
            conn,
            {
                "rc": 124 if timed_out else rc,
                "timed_out": bool(timed_out),
                "stdout": stdout,
                "stderr": stderr + (f"\n(timed out: {timed_out})" if timed_out else ""),
                "seconds": time.time() - t0,
                "rss_kb": usage.ru_maxrss,
                "cpu_s": usage.ru_utime + usage.ru_stime,
            },
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _child(request: dict, out: Path, err: Path) -> None:
    """The command itself: its own group, directory, stdin/stdout/stderr, cap and argv."""
    import resource
    import runpy
    import traceback

    os.setpgid(0, 0)
    for sig in (signal.SIGTERM, signal.SIGCHLD):  # SIGPIPE stays ignored, as Python sets it
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(request["cwd"])
    stdin = os.open(request["stdin"] or os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT, 0o600), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT, 0o600), 2)
    if request["cap"]:
        cap = int(request["cap"])
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    code = 0
    try:
        if request["script"]:
            sys.argv = [request["script"], *request["args"]]
            sys.path.insert(0, str(Path(request["script"]).parent))
            runpy.run_path(request["script"], run_name="__main__")
        else:  # as ``python -m attnkit``: the working directory first on the path
            sys.path.insert(0, os.getcwd())
            sys.argv = ["attnkit", *request["args"]]
            runpy.run_module("attnkit", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - as the interpreter does: the traceback, exit 1
        traceback.print_exc()
        code = 1
    try:
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    _serve(sys.argv[1])
