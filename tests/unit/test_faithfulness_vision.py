"""The vision subjects (attention pooling, the show-attend-tell reader) on tiny untrained models:
nothing erased is the model itself, its own attention given back changes nothing, and every test
runs over the regions."""

import pytest
import torch

from attnkit.evaluation.faithfulness import Options, decided, question
from attnkit.evaluation.faithfulness_vision import PoolingSubject, ReaderSubject
from attnkit.models.attention_pooling import AttentionPoolingClassifier
from attnkit.models.show_attend_tell import ShowAttendTell


def _pooling():
    torch.manual_seed(0)
    return AttentionPoolingClassifier(channels=[4, 8], attention_hidden=8).eval()


def _reader():
    torch.manual_seed(0)
    return ShowAttendTell(channels=[4, 8], embed=8, hidden=16, attention_dim=8).eval()


@pytest.fixture(scope="module", params=["pooling", "reader"])
def case(request):
    torch.manual_seed(1)
    x = torch.rand(1, 1, 28, 28)
    if request.param == "pooling":
        net = _pooling()
        return net, x, PoolingSubject(net, x)
    net = _reader()
    return net, x, ReaderSubject(net, x)


def test_regions_and_units(case):
    net, x, subject = case
    assert len(subject.positions) == 7 * 7  # two 2x2 poolings of 28x28
    assert subject.attention().shape == (len(subject.units), 49)
    keep = torch.ones(1, 49, dtype=torch.bool)
    full = subject.predict(keep)
    assert full.shape[:2] == (1, len(subject.units))
    # the decided classes are the most probable ones of the unerased model
    assert (full[0].argmax(-1) == subject.targets).all()
    torch.testing.assert_close(subject.predict_with_attention(subject.attention()[None]), full)


def test_erasing_a_region_takes_it_out_of_the_attention(case):
    net, x, subject = case
    keep = torch.ones(2, 49, dtype=torch.bool)
    top = int(subject.attention()[0].argmax())
    keep[1, top] = False
    probs = decided(subject.predict(keep), subject.targets)
    assert probs[0, 0] != probs[1, 0]
    assert torch.isfinite(subject.predict(torch.zeros(1, 49, dtype=torch.bool))).all()


def test_every_test_runs_over_regions(case):
    net, x, subject = case
    result = question(subject, Options(ig_steps=4, permutations=5, adversarial_steps=2))
    assert result.comprehensiveness["attention"].shape == (len(subject.units), 5)
    assert len(result.permutation["median_tvd"]) == len(subject.units)
    assert "attention~gradient" in result.correlations


def test_the_vision_api_questions_given_arrays(tmp_path):
    from types import SimpleNamespace

    import numpy as np

    from attnkit.api import VisionModel
    from attnkit.errors import AttnkitError

    data = SimpleNamespace(image_shape=lambda: (28, 28))
    config = SimpleNamespace(model_type="attention_pooling", data=data)
    model = VisionModel(config, None, _pooling())
    images = [np.random.default_rng(i).random((28, 28)) for i in range(2)]
    scores = model.faithfulness(images, out=tmp_path, permutations=3, adversarial_steps=2,
                                ig_steps=2)  # fmt: skip
    assert scores["summary"]["examples"] == 2 and (tmp_path / "report.html").is_file()
    config.model_type = "ram"
    with pytest.raises(AttnkitError, match="no soft attention"):
        model.faithfulness(images, permutations=0, adversarial_steps=0)
