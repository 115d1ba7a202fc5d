"""Sharding global batches over ranks, and starting (or not) a process group from torchrun's
environment. Training under torchrun: tests/integration/test_distributed_training.py."""

import random

import pytest
import torch

from attnkit.data.batching import Example, collate
from attnkit.data.vocab import PAD_ID
from attnkit.errors import ConfigError
from attnkit.training import distributed
from attnkit.training.distributed import Distributed, shard

TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _batch(n, seed=0):
    rng = random.Random(seed)
    return collate(
        [
            Example(src=[5] * rng.randint(1, 9) + [2], tgt=[6] * rng.randint(1, 7), index=i)
            for i in range(n)
        ]
    )


@pytest.mark.parametrize("rows, world", [(7, 2), (8, 3), (3, 3), (5, 1)])
def test_shards_partition_the_rows_and_are_trimmed(rows, world):
    batch = _batch(rows)
    parts = [shard(batch, r, world) for r in range(world)]
    assert sorted(i for p in parts for i in p.indices) == sorted(batch.indices)
    assert sum(p.num_target_tokens for p in parts) == batch.num_target_tokens
    for r, part in enumerate(parts):
        assert part.indices == batch.indices[r::world]
        assert part.src.size(1) == int(part.src_lengths.max())  # no all-padding columns
        assert bool((part.tgt_out[:, -1] != PAD_ID).any())
        assert torch.equal(part.src, batch.src[r::world, : part.src.size(1)])


def test_a_rank_without_rows_runs_one_row_with_zero_weight():
    batch = _batch(2)
    assert shard(batch, 2, 3) is None
    part, scale = Distributed(2, 3, torch.device("cpu")).shard(batch)
    assert (len(part), scale) == (1, 0.0)
    part, scale = Distributed(1, 3, torch.device("cpu")).shard(batch)
    assert part.indices == batch.indices[1:2] and scale == 3.0  # DDP divides by 3


def test_without_torchrun_there_is_no_process_group(monkeypatch):
    for name in TORCHRUN_VARS:
        monkeypatch.delenv(name, raising=False)
    assert distributed.world_size() == 1 and distributed.rank() == 0
    with distributed.start("cpu") as group:
        assert group is None
    monkeypatch.setenv("WORLD_SIZE", "1")  # torchrun --nproc_per_node 1: one process, as without it
    with distributed.start("cpu") as group:
        assert group is None


def test_a_world_size_without_the_rest_names_torchrun(monkeypatch):
    for name in TORCHRUN_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError, match="MASTER_ADDR.*torchrun --nproc_per_node N -m attnkit"):
        with distributed.start("cpu"):
            pass
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ConfigError, match="WORLD_SIZE='two'"):
        distributed.world_size()


@pytest.mark.parametrize("watcher", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_a_rank_gets_sigterm_when_its_launcher_is_killed(tmp_path, watcher):
    """kill -9 of the launcher: the worker (which asked die_with_launcher) gets SIGTERM at once
    (prctl on Linux; or the watcher thread) and stops, instead of going on as an orphan."""
    import signal
    import subprocess
    import sys
    import textwrap
    import time

    marker = tmp_path / "worker.pid"
    worker = textwrap.dedent(
        f"""
        import os, signal, sys, time
        from attnkit.training import distributed
        if {watcher!r}:
            distributed.sys.platform = "other"  # no prctl: the watcher thread
        got = []
        signal.signal(signal.SIGTERM, lambda s, f: got.append(s))
        distributed.die_with_launcher(poll_s=0.1)
        open({str(marker)!r}, "w").write(str(os.getpid()))
        for _ in range(300):
            if got:
                open({str(marker)!r} + ".term", "w").write("SIGTERM")
                sys.exit(0)
            time.sleep(0.05)
        """
    )
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {worker!r}]); "
            "time.sleep(60)",
        ]
    )
    try:
        for _ in range(400):
            if marker.exists() and marker.read_text():
                break
            time.sleep(0.05)
        assert marker.exists(), "the worker did not start"
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(timeout=10)
        for _ in range(200):
            if (tmp_path / "worker.pid.term").exists():
                break
            time.sleep(0.05)
        assert (tmp_path / "worker.pid.term").read_text() == "SIGTERM"
    finally:
        launcher.kill()
