"""Run directories: one trainer at a time, no silent replacement, writable before training;
signals."""

import collections
import errno
import os
import signal
import subprocess
import sys

import pytest
import torch

from attnkit import checkpoint as ckpt
from attnkit.errors import AttnkitError, CheckpointError, TrainingInterrupted
from attnkit.training import rundir


def _checkpoint(path, step=1):
    return ckpt.write_checkpoint(
        path, "toy", {"w": torch.ones(2)}, {"k": 1}, {"state": {"step": step}}
    )


def test_a_second_claim_is_refused_at_once_naming_the_holder(tmp_path):
    run = tmp_path / "run"
    with rundir.claim_run_dir(run, resume=False, overwrite=False, log=print):
        with pytest.raises(CheckpointError) as err:
            with rundir.claim_run_dir(run, resume=True, overwrite=False, log=print):
                pass
        assert str(err.value) == (
            f"{run}: another training run (pid {os.getpid()}) is using this directory; "
            "wait for it to end or choose another output directory"
        )
    with rundir.claim_run_dir(run, resume=False, overwrite=False, log=print):  # released on exit
        pass


@pytest.mark.skipif(rundir.fcntl is None, reason="no fcntl on this platform")
def test_a_lock_held_by_another_process_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            f"f = open({str(run / rundir.LOCK_NAME)!r}, 'a+'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "f.write('4242'); f.flush(); print('locked', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(CheckpointError, match=r"another training run \(pid 4242\)"):
            with rundir.claim_run_dir(run, resume=False, overwrite=False, log=print):
                pass
    finally:
        holder.kill()
        holder.wait()
    with rundir.claim_run_dir(
        run, resume=False, overwrite=False, log=print
    ):  # the lock died with it
        pass


def test_a_fresh_run_refuses_checkpoints_unless_told_to_overwrite(tmp_path):
    run = tmp_path / "run"
    _checkpoint(run / "last")
    _checkpoint(run / "best")
    with pytest.raises(CheckpointError) as err:
        with rundir.claim_run_dir(run, resume=False, overwrite=False, log=print):
            pass
    assert str(err.value) == (
        f"{run}: holds checkpoints of an earlier run (last, best); continue it with "
        "--resume, replace it with --overwrite, or choose another output directory"
    )
    assert (run / "last" / "meta.json").is_file()  # refused: nothing touched
    with rundir.claim_run_dir(run, resume=True, overwrite=False, log=print):
        assert (run / "last" / "meta.json").is_file()
    (run / "top").mkdir()
    with rundir.claim_run_dir(run, resume=False, overwrite=True, log=print):
        assert not any(os.path.lexists(run / name) for name in ("last", "best", "top"))


def test_an_interrupted_save_is_repaired_under_the_lock(tmp_path):
    run = tmp_path / "run"
    _checkpoint(run / ".last.old-7-8", step=3)  # killed between the two renames of a replacement
    _checkpoint(run / "top" / ".step-0000010.tmp-abcd", step=10)
    (run / ".best.tmp-half").mkdir()
    messages = []
    with rundir.claim_run_dir(run, resume=True, overwrite=False, log=messages.append):
        assert ckpt.read_json(run / "last" / "trainer.json")["state"]["step"] == 3
    assert messages == [
        f"{run / 'last'}: restored from .last.old-7-8, left by an interrupted save",
        f"{run / 'top' / 'step-0000010'}: restored from .step-0000010.tmp-abcd, "
        "left by an interrupted save",
    ]
    assert sorted(p.name for p in run.iterdir()) == [rundir.LOCK_NAME, "last", "top"]


def test_an_unwritable_run_directory_is_refused_in_one_line(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    if (
        os.geteuid() == 0
    ):  # root writes anywhere: make the probe fail as a read-only directory would

        def read_only(*args, **kwargs):
            raise PermissionError(errno.EROFS, "Read-only file system")

        monkeypatch.setattr(rundir.tempfile, "mkstemp", read_only)
        reason = "Read-only file system"
    else:
        run.chmod(0o555)
        reason = "Permission denied"
    try:
        with pytest.raises(CheckpointError) as err:
            with rundir.claim_run_dir(run, resume=False, overwrite=False, log=print):
                pytest.fail("claimed a directory it cannot write")
    finally:
        run.chmod(0o755)
    assert (
        str(err.value)
        == f"{run}: cannot write checkpoints there ({reason}); choose another output directory"
    )


def test_too_little_space_for_the_checkpoints_is_refused(tmp_path, monkeypatch):
    free = 5 * 2**20
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(
        rundir.shutil, "disk_usage", lambda path: usage(100 * 2**20, 95 * 2**20, free)
    )
    rundir.check_space(tmp_path, free // 3)
    with pytest.raises(
        CheckpointError, match=r"5.0 MiB free, the checkpoints of this run need about 6.0 MiB"
    ):
        rundir.check_space(tmp_path, 2 * 2**20)


@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_stop_signals_ask_once_then_stop(tmp_path, sig, status):
    before = signal.getsignal(sig)
    with rundir.StopSignals() as signals:
        assert not signals.requested
        os.kill(os.getpid(), sig)
        assert signals.requested and signals.signum == sig
        error = signals.interrupted(tmp_path / "last", "update 7")
        assert isinstance(error, TrainingInterrupted) and error.exit_status == status
        assert (
            str(error) == f"{signal.Signals(sig).name}: saved {tmp_path / 'last'} at update 7; "
            "continue with --resume"
        )
        with pytest.raises(KeyboardInterrupt):  # a second signal does not wait
            os.kill(os.getpid(), sig)
    assert signal.getsignal(sig) is before


def test_an_ignored_signal_stays_ignored():
    """A job started in the background (``cmd &``) ignores SIGINT: training must not heed it."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with rundir.StopSignals() as signals:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            assert not signals.requested
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize("left", [".last.old-7-8", ".last.tmp-abcd"])
def test_resume_repairs_an_interrupted_swap_before_it_reads_last(tmp_path, left):
    """The non-atomic save path killed between its two renames: the first --resume finds last
    (both trainers look through recover_before_resume before 'nothing to resume')."""
    from types import SimpleNamespace

    from attnkit.families.seq2seq import setup as seq2seq_setup
    from attnkit.families.vision import train as vision

    run = tmp_path / "run"
    _checkpoint(run / left, step=3)
    messages = []
    rundir.recover_before_resume(run, messages.append)
    assert ckpt.read_json(run / "last" / "trainer.json")["state"]["step"] == 3
    assert messages == [f"{run / 'last'}: restored from {left}, left by an interrupted save"]
    os.replace(run / "last", run / left)
    assert seq2seq_setup._last(SimpleNamespace(run_dir=run)) == run / "last"
    os.replace(run / "last", run / left)
    with pytest.raises(AttnkitError, match="unknown key"):
        vision._saved_config(run / "last")  # found, then read (this one's config is no vision's)
    assert (run / "last" / "meta.json").is_file()


def test_resume_with_last_in_place_touches_nothing(tmp_path):
    run = tmp_path / "run"
    _checkpoint(run / "last")
    (run / ".best.tmp-half").mkdir()  # a trainer may be writing it: not this call's business
    rundir.recover_before_resume(run, print)
    assert (run / ".best.tmp-half").is_dir() and not (run / rundir.LOCK_NAME).exists()
