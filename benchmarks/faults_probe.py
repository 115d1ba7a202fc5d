"""One family's in-process checks for benchmarks/faults_registry.py, run in a child process under
an address-space cap: ``python faults_probe.py SPEC.json`` prints one JSON line.

Checks (``spec["check"]``):

- ``api``: each keyword argument of each call of the family's :class:`FaultInputs` given, in
  turn, each of :data:`HOSTILE`: the call answers or raises one AttnkitError line, within
  :data:`CALL_SECONDS`; any other exception is a finding.
- ``checkpoint``: copies of the checkpoint, each crafted once (a FIFO in place of each file,
  each integer of its config set to 4e9, a safetensors header declaring a 2^60-element tensor,
  another family's weights), loaded with ``attnkit.load``: one AttnkitError line or a model.
- ``serve``: a server answering the family's model alone; every other family's request, to
  that family's route, with the model named and without: a 4xx, never a 500.

Output: {"checked": n, "failures": [why, ...], "rss_mb": peak, "cpu_s": seconds}.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import struct
import sys
import time
from pathlib import Path

CALL_SECONDS = 30.0
HUGE = 4_000_000_000
#: what each argument is given in turn
HOSTILE = {
    "None": None,
    "int": 7,
    "negative": -1,
    "float": 1.5,
    "nan": float("nan"),
    "list of None": [None],
    "huge int": 10**30,
    "bool": True,
    "dict": {"a": 1},
}


class Late(Exception):
    pass


def _alarm(signum, frame):
    raise Late()


def attempt(what: str, fn, failures: list) -> object:
    """``fn()``: None when it answered or raised one AttnkitError line; else a failure."""
    from attnkit.errors import AttnkitError

    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    t0 = time.time()
    try:
        return fn()
    except AttnkitError as exc:
        if "\n" in str(exc).strip() or not str(exc).strip():
            failures.append(f"{what}: {type(exc).__name__} of {len(str(exc).splitlines())} lines")
    except Late:
        failures.append(f"{what}: still running after {CALL_SECONDS:g} s")
    except BaseException as exc:  # noqa: BLE001 - any other exception is the finding
        failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:160]}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if time.time() - t0 > CALL_SECONDS:
            failures.append(f"{what}: took {time.time() - t0:.0f} s")
    return None


def check_api(spec: dict, inputs, failures: list) -> int:
    import attnkit
    from attnkit.errors import AttnkitError

    model = attnkit.load(spec["model"], device="cpu")
    checked = 0
    os.chdir(spec["folder"])  # a call that writes (evaluate's out) writes here
    for method, kwargs in inputs.calls.items():
        call = getattr(model, method)
        try:  # untimed: what the call imports (a valid call may still lack its data here)
            call(**kwargs)
        except AttnkitError:
            pass
        for arg in kwargs:
            for label, value in HOSTILE.items():
                bad = {**kwargs, arg: value}
                attempt(f"{method}({arg}={label})", lambda c=call, b=bad: c(**b), failures)
                checked += 1
    return checked


def _int_leaves(data, path=()):
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _int_leaves(value, (*path, key))
    elif isinstance(data, int) and not isinstance(data, bool):
        yield path


def _set(data, path, value):
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def _huge_header(path: Path) -> None:
    """Rewrite the header of ``path`` so its first tensor declares 2^60 elements."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    name = next(k for k in header if k != "__metadata__")
    header[name]["shape"] = [2**30, 2**30]
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n :])


def variants(source: Path, others: list[str]):
    """(label, change(copy)) for every crafted copy of the checkpoint in ``source``."""
    import yaml

    for file in sorted(p for p in source.rglob("*") if p.is_file()):
        rel = file.relative_to(source)

        def fifo(copy, rel=rel):
            (copy / rel).unlink()
            os.mkfifo(copy / rel)

        yield f"a FIFO as {rel}", fifo
    for name, loads, dumps in (
        ("config.yaml", yaml.safe_load, yaml.safe_dump),
        ("config.json", json.loads, json.dumps),
    ):
        if not (source / name).is_file():
            continue
        config = loads((source / name).read_text(encoding="utf-8"))
        for leaf in _int_leaves(config):

            def huge(copy, leaf=leaf, name=name, loads=loads, dumps=dumps):
                data = loads((copy / name).read_text(encoding="utf-8"))
                _set(data, leaf, HUGE)
                (copy / name).write_text(dumps(data), encoding="utf-8")

            yield f"{name} {'.'.join(map(str, leaf))}: {HUGE}", huge
    if (source / "model.safetensors").is_file():
        yield (
            "a huge tensor in model.safetensors' header",
            lambda c: _huge_header(c / "model.safetensors"),
        )
        for other in others:
            weights = Path(other) / "model.safetensors"
            if weights.is_file():
                yield (
                    f"the weights of {other}",
                    lambda c, w=weights: shutil.copy(w, c / "model.safetensors"),
                )


def check_checkpoint(spec: dict, inputs, failures: list) -> int:
    import attnkit

    name = spec["model"]
    scheme, _, rest = name.rpartition(":")
    source = Path(rest if scheme else name)
    attnkit.load(name, device="cpu")  # untimed: what loading imports, and the intact one loads
    checked = 0
    for i, (label, change) in enumerate(variants(source, spec["others"])):
        copy = Path(spec["folder"]) / f"v{i}"
        shutil.copytree(source, copy)
        change(copy)
        target = f"{scheme}:{copy}" if scheme else str(copy)
        attempt(label, lambda t=target: attnkit.load(t, device="cpu"), failures)
        shutil.rmtree(copy, ignore_errors=True)
        checked += 1
    return checked


def check_serve(spec: dict, inputs, failures: list) -> int:
    from fastapi.testclient import TestClient

    from attnkit.families import FAMILIES
    from attnkit.serve.app import ServeSettings, create_app
    from attnkit.serve.models import load_models

    served = load_models([spec["model"]], ["m"], "cpu")
    app = create_app(ServeSettings(models=[spec["model"]]), served)
    checked = 0
    with TestClient(app, raise_server_exceptions=False) as client:
        for name, family in FAMILIES.items():
            other = family.fault_inputs()
            if name == spec["family"] or family.endpoint is None or other.request is None:
                continue
            path = family.served().path
            for body in (dict(other.request), {**other.request, "model": "m"}):
                answer = client.post(path, json=body)
                checked += 1
                if not 400 <= answer.status_code < 500:
                    failures.append(f"POST {path} {body}: {answer.status_code} {answer.text[:120]}")
    return checked


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    from attnkit.families import FAMILIES

    inputs = FAMILIES[spec["family"]].fault_inputs()
    failures: list[str] = []
    check = {"api": check_api, "checkpoint": check_checkpoint, "serve": check_serve}
    checked = check[spec["check"]](spec, inputs, failures)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "checked": checked,
                "failures": failures,
                "rss_mb": usage.ru_maxrss / 1024,
                "cpu_s": usage.ru_utime + usage.ru_stime,
            }
        )
    )


if __name__ == "__main__":
    main()
