"""CPU threads for the decoding commands: the measured default, OMP_NUM_THREADS respected, counts
below one refused."""

import pytest
import torch

from attnkit.device import DECODE_THREADS, set_threads
from attnkit.errors import AttnkitError


@pytest.fixture(autouse=True)
def torch_threads():
    """Restore torch's thread count after each test."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_an_explicit_count_is_applied():
    torch.set_num_threads(1)
    assert set_threads(2) == 2 and torch.get_num_threads() == 2
    assert set_threads(1) == 1 and torch.get_num_threads() == 1


def test_default_is_the_decoding_default_unless_omp_num_threads_is_set(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    torch.set_num_threads(DECODE_THREADS + 1)
    assert set_threads(None) == DECODE_THREADS == torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    torch.set_num_threads(3)  # as torch would have read it at start
    assert set_threads(None) == 3 == torch.get_num_threads()


@pytest.mark.parametrize("threads", [0, -2])
def test_fewer_than_one_thread_is_a_user_error(threads):
    before = torch.get_num_threads()
    with pytest.raises(AttnkitError, match=f"--threads must be at least 1, got {threads}"):
        set_threads(threads)
    assert torch.get_num_threads() == before
