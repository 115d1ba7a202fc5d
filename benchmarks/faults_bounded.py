"""The cases of the issue "Bounded against hostile input", registered into benchmarks/faults.py.

Item ``bN`` is item N of that issue. Each case that could cost memory (a crafted checkpoint, a
YAML alias bomb, an endless stream) runs its command under an address-space cap
(``RLIMIT_AS``, :data:`AS_CAP`) set in the child, so the harness cannot take the machine down,
and measures the child's peak RSS and CPU time: the case fails above :data:`MAX_RSS_MB` or
:data:`MAX_CPU_S` (CPU, not wall time: the machine may be shared), or without exit 2 and one
line. :func:`register` is called by faults.py with itself, whose helpers the cases use.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

AS_CAP = 3 << 30  # bytes of address space a command may map (torch alone maps ~0.7 GB)
MAX_RSS_MB = 1024
MAX_CPU_S = 10.0


def capped(
    h,
    ctx,
    args: list,
    folder: Path,
    stdin_path: str | None = None,
    timeout: float = 120,
    script: str | None = None,
):
    """(Result, peak RSS MB, CPU s) of ``attnkit args`` (or ``script`` run as ``__main__`` with
    ``args`` as its argv) under :data:`AS_CAP`, with ``stdin_path`` (a file) as its stdin:
    forked from the harness's zygote, or with ``--no-fork`` a fresh interpreter; either way its
    own process group bounded by ``timeout`` CPU seconds and the stall guard
    (``faults_zygote.Budget``), its peak RSS and CPU from ``wait4``. The one capped runner of
    this module and benchmarks/faults_registry.py (``h``: the faults module)."""
    if done := ctx.forked(args, folder, stdin_path, timeout, AS_CAP, script):
        return done
    head = [sys.executable, script] if script else ctx.command([])
    return ctx.fresh([*head, *map(str, args)], folder, stdin_path, timeout=timeout, cap=AS_CAP)


def bounded(h, res, rss, cpu, *mentions) -> str | None:
    """Why a capped command's result breaks the bounds (not one error line naming ``mentions``,
    no usage report, over :data:`MAX_RSS_MB` or :data:`MAX_CPU_S`), or None when it holds."""
    why = h.one_line_error(res, *mentions)
    if why is None and rss is None:
        return "no usage report (the command died)"
    if why is None and rss > MAX_RSS_MB:
        return f"peak RSS {rss:.0f} MB, above {MAX_RSS_MB} MB"
    if why is None and cpu > MAX_CPU_S:
        return f"{cpu:.1f} s of CPU, above {MAX_CPU_S:g} s"
    return why


def _bomb(levels: int = 9) -> str:
    """A "billion laughs": 9**levels strings from a few hundred bytes."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _flow_bomb(levels: int = 8) -> str:
    """The same in one flow value (for ``--set``)."""
    nested = "&b0 [" + ", ".join(["lol"] * 9) + "]"
    for i in range(1, levels):
        nested = f"&b{i} [" + ", ".join([nested] + [f"*b{i - 1}"] * 8) + "]"
    return nested


def register(h) -> None:  # noqa: C901 - one list of cases
    """Add the cases to ``h.CASES`` (``h``: the faults module)."""

    def add(name: str, item: str, needs_model: bool = True):
        def decorate(fn):
            h.CASES.append(h.Case(name, item, fn, needs_model))
            return fn

        return decorate

    # ---- b1: a crafted checkpoint costs nothing before it is refused ---------------------------
    def config_edit(change):
        def damage(ckpt: Path) -> None:
            import yaml

            path = ckpt / "config.yaml"
            config = yaml.safe_load(path.read_text(encoding="utf-8"))
            change(config)
            path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

        return damage

    def raw_config(text_of):
        def damage(ckpt: Path) -> None:
            path = ckpt / "config.yaml"
            path.write_text(text_of(path.read_text(encoding="utf-8")), encoding="utf-8")

        return damage

    commands = {
        "translate": lambda c: ["translate", "--model", c, "abc"],
        "evaluate": lambda c: ["evaluate", "--model", c, "--beam", "1", "--out", "eval"],
        "plot": lambda c: ["plot", "--model", c, "abc", "-o", "x.png"],
        "explain": lambda c: ["explain", "--model", c, "abc", "--out", "ex"],
        "serve": lambda c: ["serve", "--model", c, "--port", "0"],
    }
    crafted = {
        "ff_dim_4e9": (config_edit(lambda c: c["model"].update(ff_dim=4_000_000_000)), "ff_dim"),
        "embedding_dim_2e9": (
            config_edit(lambda c: c["model"].update(embedding_dim=2_000_000_000)),
            "embedding_dim",
        ),
        "encoder_layers_1e6": (
            config_edit(lambda c: c["model"].update(encoder_layers=1_000_000)),
            "encoder_layers",
        ),
        "decoder_hidden_1e5": (
            config_edit(lambda c: c["model"].update(decoder_hidden=100_000)),
            "decoder_hidden",
        ),
        "widths_under_the_cap": (
            config_edit(lambda c: c["model"].update(decoder_hidden=60_000, attention_dim=60_000)),
            "model.safetensors",
        ),
        "alias_bomb": (raw_config(lambda text: _bomb() + text), "aliases"),
        "key_twice": (raw_config(lambda text: text + "name: again\n"), "given twice"),
        "nested_deep": (raw_config(lambda text: text + "deep: " + "[" * 100_000), "nested"),
    }
    for what, (damage, mention) in crafted.items():
        for command in ("translate", "evaluate", "plot", "explain", "serve"):
            if command != "translate" and what not in ("ff_dim_4e9", "alias_bomb"):
                continue  # every damage through translate; two through every command

            def run(ctx, folder, damage=damage, mention=mention, command=command):
                ckpt = ctx.best_copy(folder)
                damage(ckpt)
                return bounded(h, *capped(h, ctx, commands[command](str(ckpt)), folder), mention)

            h.CASES.append(h.Case(f"ckpt_{what}_{command}", "b1", run))

    @add("ckpt_vision_config_huge_width", "b1", needs_model=False)
    def _vision_ckpt(ctx, folder):
        script = (
            "import sys, dataclasses\n"
            "from attnkit.checkpoint import write_checkpoint\n"
            "from attnkit.config import from_dict\n"
            "from attnkit.families.vision.kinds import MODEL_TYPES\n"
            "f = MODEL_TYPES['attention_pooling']\n"
            "m = from_dict(f.config_cls, {}, 'model')\n"
            "cfg = {'family': 'vision', 'data': {'task': 'mnist'},"
            " 'model': {'type': 'attention_pooling', **dataclasses.asdict(m)}}\n"
            "write_checkpoint(sys.argv[1], 'vision', f.build(m).state_dict(), cfg, {})\n"
        )
        made = subprocess.run(
            [sys.executable, "-c", script, str(folder / "vis")],
            env=ctx.env(),
            capture_output=True,
            timeout=120,
        )
        if made.returncode != 0:
            return f"could not write the vision checkpoint: {made.stderr[-300:]!r}"
        ints = [
            k
            for k, v in _read_yaml(folder / "vis" / "config.yaml")["model"].items()
            if isinstance(v, int) and not isinstance(v, bool)
        ]
        if not ints:
            return "the vision config has no size key"
        config_edit(lambda c: c["model"].update({ints[0]: 60_000}))(folder / "vis")
        args = ["plot", "--model", str(folder / "vis"), "--image", "0", "-o", "out"]
        return bounded(h, *capped(h, ctx, args, folder), "model.safetensors")

    # ---- b2/b3/b8: YAML read with limits ----------------------------------------------------
    def train_raw(text: str, mention: str, item: str = "b2"):
        def run(ctx, folder):
            cfg = ctx.config(folder)
            (folder / "exp.yaml").write_text(text + cfg.read_text(encoding="utf-8"), "utf-8")
            args = ["train", str(folder / "exp.yaml"), "--output-dir", "run"]
            return bounded(h, *capped(h, ctx, args, folder), mention)

        return run

    h.CASES.append(h.Case("config_alias_bomb", "b2", train_raw(_bomb(), "aliases"), False))
    h.CASES.append(h.Case("config_key_twice", "b2", train_raw("name: one\n", "given twice"), False))
    h.CASES.append(
        h.Case(
            "config_nested_100000_brackets",
            "b8",
            train_raw("deep: " + "[" * 100_000 + "\n", "nested"),
            False,
        )
    )
    blocks = "deep:\n" + "".join(" " * i + "k:\n" for i in range(1, 3000))
    h.CASES.append(h.Case("config_nested_3000_blocks", "b8", train_raw(blocks, "nested"), False))

    def train_set(*overrides: str, mention: str = "", stdin_path: str | None = None):
        def run(ctx, folder):
            args = ["train", str(ctx.config(folder)), "--output-dir", "run"]
            for item in overrides:
                args += ["--set", item]
            return bounded(h, *capped(h, ctx, args, folder, stdin_path), mention)

        return run

    h.CASES.append(
        h.Case(
            "set_alias_bomb",
            "b2",
            train_set(f"data.languages={_flow_bomb()}", mention="aliases"),
            False,
        )
    )
    h.CASES.append(
        h.Case("train_seed_negative", "b8", train_set("train.seed=-1", mention="seed"), False)
    )

    # ---- b3: every reader bounded -----------------------------------------------------------
    h.CASES.append(
        h.Case(
            "data_train_dev_zero",
            "b3",
            train_set("data.train=/dev/zero", mention="/dev/zero"),
            False,
        )
    )

    @add("train_config_dev_zero", "b3", needs_model=False)
    def _train_dev_zero(ctx, folder):
        return bounded(h, *capped(h, ctx, ["train", "/dev/zero"], folder), "/dev/zero")

    @add("translate_stdin_dev_zero", "b3")
    def _stdin_zero(ctx, folder):
        args = ["translate", "--model", str(ctx.best_copy(folder)), "-"]
        return bounded(h, *capped(h, ctx, args, folder, "/dev/zero"), "<stdin>:1")

    @add("translate_stdin_one_1gb_line", "b3")
    def _stdin_big_line(ctx, folder):
        line = folder / "line.txt"
        with open(line, "wb") as f:  # sparse: a gigabyte of one line costs no disk
            f.truncate(1 << 30)
        args = ["translate", "--model", str(ctx.best_copy(folder)), "-"]
        return bounded(h, *capped(h, ctx, args, folder, str(line)), "<stdin>:1", "limit")

    def evaluate_files(*files: str, mention: str):
        def run(ctx, folder):
            args = ["evaluate", "--model", str(ctx.best_copy(folder)), "--beam", "1"]
            args += [*files, "--out", "eval"]
            return bounded(h, *capped(h, ctx, args, folder), mention)

        return run

    h.CASES.append(
        h.Case(
            "evaluate_tsv_dev_urandom",
            "b3",
            evaluate_files("--tsv", "/dev/urandom", mention="/dev/urandom"),
        )
    )
    h.CASES.append(
        h.Case(
            "evaluate_src_ref_dev_zero",
            "b3",
            evaluate_files("--src", "/dev/zero", "--ref", "/dev/zero", mention="/dev/zero"),
        )
    )

    # ---- b4: the server bounds time --------------------------------------------------------
    def start_serve(ctx, folder, ckpt: Path, *extra: str):
        proc = h.Running(ctx, ["serve", "--model", str(ckpt), "--port", "0", *extra], folder)
        if not proc.wait_for("attnkit serve: http://", timeout=90):
            return proc, None
        line = next(ln for ln in proc.lines if "attnkit serve: http://" in ln)
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        return proc, port

    def stop(proc) -> None:
        proc.proc.send_signal(signal.SIGTERM)
        proc.finish(30)

    @add("serve_slow_clients_are_closed", "b4")
    def _slow_clients(ctx, folder):
        proc, port = start_serve(
            ctx, folder, ctx.best_copy(folder), "--header-seconds", "2", "--body-seconds", "2"
        )
        if port is None:
            return f"serve did not start: {proc.finish(5).tail()}"
        try:
            sends = {
                "nothing": b"",
                "half the headers": b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Le",
                "9 of 100 bytes": b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n"
                b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"inputs"',
            }
            for what, data in sends.items():
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                conn.sendall(data)
                conn.settimeout(10)
                t0, got = time.time(), b""
                try:
                    while chunk := conn.recv(65536):
                        got += chunk
                except (TimeoutError, OSError):
                    return f"{what}: the connection was still open after 10 s"
                finally:
                    conn.close()
                if time.time() - t0 > 8:
                    return f"{what}: closed only after {time.time() - t0:.0f} s"
                if what.startswith("9") and b" 408 " not in got.split(b"\r\n")[0]:
                    return f"{what}: answered {got[:60]!r}, expected a 408"
            for body, needle in (
                (b'{"inputs": ["\xff"]}', b"not UTF-8"),
                (b"[" * 50_000, b"nested deeper"),
            ):
                conn = socket.create_connection(("127.0.0.1", port), timeout=10)
                conn.sendall(
                    b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    b"Content-Type: application/json\r\nContent-Length: "
                    + str(len(body)).encode()
                    + b"\r\n\r\n"
                    + body
                )
                got = b""
                while chunk := conn.recv(65536):
                    got += chunk
                conn.close()
                if b" 422 " not in got.split(b"\r\n")[0] or needle not in got:
                    return f"a body with {needle.decode()}: answered {got[:120]!r}"
        finally:
            stop(proc)
        return None

    @add("serve_busy_port_is_one_line", "b4")
    def _busy_port(ctx, folder):
        taken = socket.create_server(("127.0.0.1", 0))
        try:
            port = taken.getsockname()[1]
            args = ["serve", "--model", str(ctx.best_copy(folder)), "--port", str(port)]
            return h.one_line_error(ctx.attnkit(args, folder), "already in use", "--port")
        finally:
            taken.close()

    @add("serve_image_above_pillow_guard_names_the_side_limit", "b8")
    def _png_side(ctx, folder):
        import struct
        import zlib

        def chunk(kind: bytes, data: bytes) -> bytes:
            return (
                struct.pack(">I", len(data))
                + kind
                + data
                + struct.pack(">I", zlib.crc32(kind + data))
            )

        png = (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", b"x")
        )
        script = (
            "import sys\n"
            "from attnkit.families.uploads import _image_size\n"
            "from attnkit.errors import RequestError\n"
            "try:\n    _image_size(open(sys.argv[1], 'rb').read(), 1024)\n"
            "except RequestError as e:\n    print(e.status, e.message)\n"
        )
        (folder / "big.png").write_bytes(png)
        done = subprocess.run(
            [sys.executable, "-c", script, str(folder / "big.png")],
            env=ctx.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if not done.stdout.startswith("413 ") or "pixels a side" not in done.stdout:
            return f"answered {done.stdout.strip()[:200]!r} {done.stderr[-200:]!r}"
        return None

    # ---- b5: DDP workers die with their launcher ------------------------------------------
    @add("ddp_kill9_launcher_stops_the_workers", "b5", needs_model=False)
    def _ddp_orphans(ctx, folder):
        path = ctx.long_config(folder, eval_every=10, max_minutes=3)  # orphans would run on
        launcher = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nproc_per_node",
                "2",
                "--master_port",
                str(_free_port()),
                "-m",
                "attnkit",
                "train",
                str(path),
                "--output-dir",
                "run",
            ],
            cwd=folder,
            env=ctx.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            workers = []
            for _ in range(1200):  # the workers, once both train (their first checkpoint)
                workers = _children(launcher.pid)
                if len(workers) == 2 and (folder / "run" / "best" / "meta.json").is_file():
                    break
                time.sleep(0.1)
            else:
                return f"the two workers did not start training (children: {workers})"
            launcher.kill()
            launcher.wait(timeout=30)
            for _ in range(300):  # a SIGTERM stops a rank after its update: seconds, not minutes
                alive = [pid for pid in workers if _alive(pid)]
                if not alive:
                    break
                time.sleep(0.1)
            else:
                for pid in alive:
                    os.kill(pid, signal.SIGKILL)
                return f"workers {alive} still ran 30 s after the launcher was killed"
        finally:
            if launcher.poll() is None:
                launcher.kill()
        last = folder / "run" / "last"
        if not (last / "meta.json").is_file():
            return "no last/ after the workers stopped"
        return h.finite_checkpoint(last)

    # ---- b6: --resume repairs an interrupted swap ------------------------------------------
    @add("resume_after_a_crash_between_the_renames", "b6")
    def _resume_swap(ctx, folder):
        run_dir = ctx.run_copy(folder)
        os.replace(run_dir / "last", run_dir / ".last.old-123-456")  # the non-atomic path
        args = ["train", str(ctx.config(folder)), "--output-dir", "run", "--resume"]
        res = ctx.attnkit([*args, "--set", "train.epochs=3"], folder)
        if why := h.succeeded(res):
            return f"the first --resume: {why}"
        if "restored from .last.old-123-456" not in res.stdout + res.stderr:
            return "the repair was not reported"
        return h.finite_checkpoint(run_dir / "last")

    # ---- b7: every write is one line on failure --------------------------------------------
    def blocked(make_args, *mentions):
        def run(ctx, folder):
            (folder / "a-file").write_text("x")
            full = folder / "full.png"
            full.symlink_to("/dev/full")
            ckpt = ctx.best_copy(folder)
            args = make_args(ckpt, folder)
            if args[0] == "evaluate":  # its split: the shared files (never the checkpoint's paths)
                args += ["--data-dir", ctx.data]
            return h.one_line_error(ctx.attnkit(args, folder), *mentions)

        return run

    writes = {
        "evaluate_out_under_a_file": (
            lambda c, f: ["evaluate", "--model", c, "--beam", "1", "--out", f / "a-file" / "e"],
            ("a-file",),
        ),
        "plot_o_full_disk": (
            lambda c, f: ["plot", "--model", c, "abc", "-o", f / "full.png"],
            ("full.png", "space"),
        ),
        "plot_o_under_a_file": (
            lambda c, f: ["plot", "--model", c, "abc", "-o", f / "a-file" / "x.png"],
            ("a-file",),
        ),
        "translate_attention_out_under_a_file": (
            lambda c, f: ["translate", "--model", c, "abc", "--attention-out", f / "a-file/x.json"],
            ("a-file",),
        ),
        "explain_out_under_a_file": (
            lambda c, f: ["explain", "--model", c, "abc", "--out", f / "a-file" / "e"],
            ("a-file",),
        ),
        "demo_out_under_a_file": (
            lambda c, f: ["demo", "--quick", "--no-progress", "--out", f / "a-file" / "d"],
            ("a-file",),
        ),
    }
    for name, (make, mentions) in writes.items():
        h.CASES.append(
            h.Case(name, "b7", blocked(lambda c, f, m=make: [str(a) for a in m(c, f)], *mentions))
        )

    def board_in_the_way(kind: str):
        def run(ctx, folder):
            run_dir = ctx.run_copy(folder)
            place = run_dir / "tensorboard"
            shutil.rmtree(place, ignore_errors=True)
            if kind == "file":
                place.write_text("in the way")
            else:
                place.symlink_to(folder / "gone" / "deeper")
            args = ["train", str(ctx.config(folder)), "--output-dir", "run", "--resume"]
            res = ctx.attnkit(
                [*args, "--set", "train.epochs=3", "--set", "train.tensorboard=true"], folder
            )
            if why := h.succeeded(res):
                return why
            if "train.tensorboard: logging stopped" not in res.stdout + res.stderr:
                return "training went on without saying that logging stopped"
            return h.finite_checkpoint(run_dir / "last")

        return run

    h.CASES.append(h.Case("tensorboard_is_a_file", "b7", board_in_the_way("file")))
    h.CASES.append(h.Case("tensorboard_dangling_link", "b7", board_in_the_way("link")))

    # ---- b8: the small items ----------------------------------------------------------------
    @add("plot_blank_text_is_refused", "b8")
    def _plot_blank(ctx, folder):
        args = ["plot", "--model", str(ctx.best_copy(folder)), "   ", "-o", "x.png"]
        why = h.one_line_error(ctx.attnkit(args, folder), "blank")
        if why is None and (folder / "x.png").exists():
            return "refused, but x.png was written"
        return why

    @add("translate_stdin_bom_is_dropped", "b8")
    def _bom(ctx, folder):
        ckpt = str(ctx.best_copy(folder))
        with_bom = ctx.attnkit(
            ["translate", "--model", ckpt, "-"], folder, stdin=b"\xef\xbb\xbfabc\n"
        )
        plain = ctx.attnkit(["translate", "--model", ckpt, "abc"], folder)
        if why := h.succeeded(with_bom) or h.succeeded(plain):
            return why
        if "<unk>" in with_bom.stderr or "never seen" in with_bom.stderr:
            return f"the BOM was read as a character: {with_bom.tail()}"
        return None if with_bom.stdout == plain.stdout else "the BOM changed the translation"

    @add("translate_nfd_reads_as_nfc", "b8")
    def _nfd(ctx, folder):
        ckpt = str(ctx.best_copy(folder))
        composed = ctx.attnkit(["translate", "--model", ckpt, "abc\u00e9"], folder)
        decomposed = ctx.attnkit(["translate", "--model", ckpt, "abce\u0301"], folder)
        if why := h.succeeded(composed) or h.succeeded(decomposed):
            return why
        if composed.stdout != decomposed.stdout:
            return "the two spellings of the same letter translate differently"
        return None


def _read_yaml(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
