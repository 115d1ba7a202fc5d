"""The TensorBoard log of a run: scalars, pictures, resuming, and running without the package."""

from __future__ import annotations

import sys
import time

import pytest
import torch
from matplotlib.figure import Figure
from tensorboard.backend.event_processing import event_accumulator

from attnkit.training import tensorboard as tb


def events(directory):
    """Everything TensorBoard would show for ``directory``."""
    accumulator = event_accumulator.EventAccumulator(
        str(directory), size_guidance={"scalars": 0, "images": 0}
    )
    accumulator.Reload()
    return accumulator


def steps(accumulator, tag: str) -> list[int]:
    return [e.step for e in accumulator.Scalars(tag)]


def small_figure(value: float) -> Figure:
    fig = Figure(figsize=(1, 1), dpi=20)
    fig.add_subplot().imshow([[value, 1.0 - value]])
    return fig


def test_the_window_averages_the_updates_since_the_last_log():
    window = tb.Window("tokens")
    assert window.take() == {} and not window.pending
    window.add(6.0, 3, 10)  # summed loss, correct, items
    window.add(torch.tensor(4.0), torch.tensor(2), 10)  # tensors are summed as tensors
    assert window.pending
    out = window.take()
    assert set(out) == {"loss", "accuracy", "tokens_per_s"}
    assert out["loss"] == pytest.approx(0.5) and out["accuracy"] == pytest.approx(0.25)
    assert out["tokens_per_s"] > 0
    assert not window.pending and window.take() == {}  # a new window started


def test_scalars_leave_counts_out_and_pictures_become_images(tmp_path):
    with tb.Board(tmp_path / "tb", True, print, "tokens") as board:
        board.start(0)
        board.scalars(3, {"exact_match": 50.0, "items": 40, "note": "text"}, "dev")
        board.window.add(2.0, 1, 4)
        board.train(3, 1e-3, 0)
        board.pictures(3, [("attention/dev0", small_figure(0.2))])
    logged = events(tmp_path / "tb")
    assert set(logged.Tags()["scalars"]) == {
        "dev/exact_match",
        "train/loss",
        "train/accuracy",
        "train/tokens_per_s",
        "train/lr",
        "train/skipped_updates",
    }
    assert logged.Scalars("train/loss")[0].value == pytest.approx(0.5)
    (image,) = logged.Images("attention/dev0")
    assert image.step == 3 and image.encoded_image_string[:8] == b"\x89PNG\r\n\x1a\n"


def test_pictures_over_their_share_of_the_time_are_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(tb, "PICTURE_SHARE", 0.0)
    made = []

    def figures(step):
        made.append(step)
        yield "attention/dev0", small_figure(0.5)

    with tb.Board(tmp_path / "tb", True, print, "images") as board:
        board.start(0)
        board.pictures(1, figures(1))  # nothing spent yet: drawn
        board.pictures(2, figures(2))  # over a zero share: not even made
    assert made == [1]
    assert [e.step for e in events(tmp_path / "tb").Images("attention/dev0")] == [1]


def test_a_resumed_run_drops_what_the_stopped_run_logged_after_its_checkpoint(tmp_path):
    with tb.Board(tmp_path / "tb", True, print, "tokens") as board:
        board.start(0)
        for step in (2, 4, 6, 8):  # the run stopped at 8, its last checkpoint was at 4
            board.scalars(step, {"exact_match": float(step)}, "dev")
    # TensorBoard reads a directory's event files in name order, and a name is the second it was
    # opened, then a counter of this process's writers: within one second ".10" would sort before
    # ".9". A resumed run starts in a later second, as a real one does.
    time.sleep(1.01 - time.time() % 1)
    with tb.Board(tmp_path / "tb", True, print, "tokens") as board:
        board.start(4)  # resumed from the checkpoint of update 4
        board.scalars(10, {"exact_match": 10.0}, "dev")
    assert len(list((tmp_path / "tb").iterdir())) == 2  # appended beside the first file
    assert steps(events(tmp_path / "tb"), "dev/exact_match") == [2, 4, 10]


def test_off_writes_nothing(tmp_path):
    with tb.Board(tmp_path / "tb", False, print, "tokens") as board:
        board.start(0)
        board.scalars(1, {"loss": 1.0}, "train")
        board.window.add(1.0, 1, 1)
        board.train(1, 1e-3, 0)
        board.pictures(1, iter([("attention/dev0", small_figure(0.5))]))
        assert not board.active and not board.window.pending
    assert not (tmp_path / "tb").exists()


def test_without_the_package_the_run_says_so_once_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails
    monkeypatch.setattr(tb, "_said_missing", False)
    said = []
    for _ in range(2):
        with tb.Board(tmp_path / "tb", True, said.append, "tokens") as board:
            board.start(0)
            board.scalars(1, {"loss": 1.0}, "train")
            assert not board.active
    assert len(said) == 1 and "tensorboard package is missing" in said[0]
    assert "train.tensorboard: false" in said[0]
    assert not (tmp_path / "tb").exists()


@pytest.mark.parametrize("on", [True, False], ids=["event-files", "off"])
def test_listeners_get_every_group_of_scalars_with_or_without_event_files(tmp_path, on):
    heard = []
    with tb.Board(tmp_path / "tb", on, print, "tokens") as board:
        board.listen(lambda *args: heard.append(args))
        board.start(0)
        board.window.add(3.0, 1, 2)
        board.train(20, 1e-3, 1)
        board.scalars(20, {"bleu": 7.5, "sentences": 30, "note": "text"}, "dev")
    (prefix, step, values), dev = heard
    assert (prefix, step) == ("train", 20) and not board.window.pending
    assert values["loss"] == pytest.approx(1.5) and values["accuracy"] == pytest.approx(0.5)
    assert (values["lr"], values["skipped_updates"]) == (1e-3, 1) and values["tokens_per_s"] > 0
    assert dev == ("dev", 20, {"bleu": 7.5})  # counts and text left out, as in the event files
    assert (tmp_path / "tb").exists() is on


@pytest.mark.parametrize("kind", ["file", "dangling link"])
def test_a_file_or_a_dangling_link_in_its_place_stops_logging_not_the_run(tmp_path, kind):
    place = tmp_path / "tb"
    if kind == "file":
        place.write_text("not a directory")
    else:
        place.symlink_to(tmp_path / "gone" / "deeper")
    said = []
    with tb.Board(place, True, said.append, "tokens") as board:
        board.start(0)
        board.scalars(1, {"loss": 1.0}, "train")
        assert not board.active
    assert len(said) == 1 and "train.tensorboard: logging stopped" in said[0]
    assert "\n" not in said[0]
