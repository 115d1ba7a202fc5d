"""The copy switch learns to copy what it never saw: on copyrare, a small model with it writes the
unseen names and numbers of the test requests, the same model without it cannot (it writes
<unk>), for every seed; then evaluate and plot work on the copying checkpoint."""

import warnings

import pytest

import attnkit
from attnkit.cli import main
from attnkit.data.tasks import copyrare
from attnkit.data.tasks.registry import build_splits

pytestmark = pytest.mark.slow

SMALL = {
    "data.train_size": 1000,
    "data.dev_size": 50,
    "data.test_size": 100,
    "model.embedding_dim": 32,
    "model.encoder_hidden": 32,
    "model.decoder_hidden": 64,
    "model.attention_dim": 32,
    "train.epochs": 4,
    "train.progress": False,
    "train.tensorboard": False,
}


def _slot_accuracy(checkpoint) -> float:
    model = attnkit.load(checkpoint)
    sources, refs = zip(*build_splits(model.config.data).test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unseen names are warned about
        outputs = [t.output for t in model.translate(list(sources))]
    return copyrare.slot_accuracy(outputs, refs)


@pytest.mark.parametrize("seed", [1, 2])
def test_copying_writes_the_unseen_names_and_numbers(tmp_path, seed):
    scores = {}
    for name in ("copyrare_copy", "copyrare_nocopy"):
        run = attnkit.train(
            f"configs/{name}.yaml", {**SMALL, "train.seed": seed}, output_dir=tmp_path / name
        )
        scores[name] = _slot_accuracy(run.best)
    assert scores["copyrare_nocopy"] < 0.1, scores  # only the few names seen in training
    assert scores["copyrare_copy"] > scores["copyrare_nocopy"] + 0.4, scores
    if seed == 1:  # the command line on the copying checkpoint: evaluate, plot with p_gen
        best = tmp_path / "copyrare_copy" / "best"
        assert (
            main(["evaluate", "--model", str(best), "--beam", "2", "--out", str(tmp_path / "e")])
            == 0
        )
        picture = tmp_path / "map.png"
        assert (
            main(
                ["plot", "--model", str(best), "send 48213 dollars to bokarime", "-o", str(picture)]
            )
            == 0
        )
        assert picture.stat().st_size > 0
