"""Every family's Python API checks its arguments as the server checks a request: a wrong type, a
value that would be coerced or a setting past its bound is one InputError naming the argument
(the 422 of serve/problems.py), before any work, never a TypeError from inside."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnkit
from attnkit.data.babi_vectors import BabiVocab
from attnkit.data.vocab import Vocab
from attnkit.errors import InputError
from attnkit.families import arguments as check
from attnkit.families.graph.bundle import build_model as build_graph
from attnkit.families.graph.config import parse_config as graph_config
from attnkit.families.graph.model import GraphModel
from attnkit.families.memnet.config import parse_config as memnet_config
from attnkit.families.memnet.model import MemoryModel
from attnkit.families.pointer.bundle import build_model as build_pointer
from attnkit.families.pointer.config import parse_config as pointer_config
from attnkit.families.pointer.model import PointerModel
from attnkit.families.serving import Limits
from attnkit.families.speech.bundle import build_model as build_speech
from attnkit.families.speech.config import parse_config as speech_config
from attnkit.families.speech.model import SpeechModel
from attnkit.families.text.bundle import TextBundle, build_model
from attnkit.families.text.config import parse_config as text_config
from attnkit.families.text.model import TextModel
from attnkit.models.memn2n import MemN2N

WORDS = ["<empty>", "bathroom", "is", "mary", "moved", "the", "to", "where"]
STORY = ["Mary moved to the bathroom."]


def test_the_checks_refuse_types_coercions_and_bounds():
    assert check.integer(np.int64(3), "beam", 1, 5) == 3
    for bad in (None, "2", 1.5, 2.0, True, [2]):
        with pytest.raises(InputError) as caught:
            check.integer(bad, "beam", 1, 5)
        assert caught.value.name == "beam" and str(caught.value).startswith("beam")
    for bad, needle in ((0, "at least 1"), (6, "at most 5")):
        with pytest.raises(InputError, match=needle):
            check.integer(bad, "beam", 1, 5)
    assert check.texts("a", "texts") == ["a"] and check.texts(("a", "b"), "t") == ["a", "b"]
    with pytest.raises(InputError, match=r"texts\[1\]: give a string, not None"):
        check.texts(["a", None], "texts")
    with pytest.raises(InputError, match="give a string or a list of strings, not int"):
        check.texts(5, "texts")
    with pytest.raises(InputError, match="use one of dev, test"):
        check.choice("nope", "split", ("dev", "test"))
    with pytest.raises(InputError, match="finite"):
        check.number(float("nan"), "alpha", 0)
    assert check.MAX_BEAM >= Limits().max_beam and check.MAX_TOP_K >= Limits().max_top_k


@pytest.fixture(scope="module")
def models():
    """One API object of every family: the zoo's seq2seq and vision models, and untrained tiny
    text, graph, memory, pointer and speech models (their answers do not matter here)."""
    torch.manual_seed(0)
    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", "a", "film", "good"])
    text = TextModel(TextBundle(text_config({}), vocab, ["neg", "pos"], None))
    text.bundle.model = text.net = build_model(text.config, vocab, text.labels).eval()
    cfg = graph_config(
        {
            "family": "graph",
            "data": {"name": "dictionary_lookup", "k": 3, "graphs": 4, "normalize": False},
            "model": {"attention": "gatv2", "hidden": 4, "heads": 2, "self_loops": False},
        }
    )
    from attnkit.data.graph.sources import load_graph

    graph = load_graph(cfg.data)
    mcfg = memnet_config({"family": "memnet", "data": {"memory_size": 4}, "model": {"dim": 6}})
    memnet = MemN2N(mcfg.model, len(WORDS), 4).eval()
    pcfg = pointer_config({"family": "pointer", "data": {"task": "hull", "points": 5},
                           "model": {"hidden": 8, "attention_dim": 8}})  # fmt: skip
    scfg = speech_config({"family": "speech", "model": {"listener_hidden": 8, "speller_hidden": 8}})
    return {
        "seq2seq": attnkit.load("zoo:numbers-bahdanau", device="cpu"),
        "vision": attnkit.load("zoo:mnist-ram", device="cpu"),
        "text": text,
        "graph": GraphModel(cfg, graph, build_graph(cfg, graph).eval()),
        "memnet": MemoryModel(mcfg, BabiVocab(WORDS, 6, 4, 4), memnet),
        "pointer": PointerModel(pcfg, build_pointer(pcfg).eval()),
        "speech": SpeechModel(scfg, build_speech(scfg).eval()),
    }


POINTS = [[0.1, 0.1], [0.9, 0.2], [0.5, 0.9]]
#: (family, call, the argument the error names, words of its message)
CASES = [
    ("seq2seq", lambda m: m.translate(None), "texts", "not None"),
    ("seq2seq", lambda m: m.translate([None]), "texts[0]", "not None"),
    ("seq2seq", lambda m: m.translate("vier", beam="2"), "beam", "integer"),
    ("seq2seq", lambda m: m.translate("vier", beam=10**6), "beam", "at most"),
    ("seq2seq", lambda m: m.translate("vier", beam=0), "beam", "at least 1"),
    ("seq2seq", lambda m: m.translate("vier", beam=2.0), "beam", "integer"),
    ("seq2seq", lambda m: m.translate("vier", top_k=10**6), "top_k", "at most"),
    ("seq2seq", lambda m: m.translate("vier", alpha="1"), "alpha", "number"),
    ("seq2seq", lambda m: m.translate("vier", prefix=[None]), "prefix[0]", "string"),
    ("seq2seq", lambda m: m.explain("vier", method=None), "method", "string"),
    ("seq2seq", lambda m: m.explain("vier", reference=5), "reference", "string"),
    ("seq2seq", lambda m: m.evaluate(split="nope"), "split", "train, dev, test"),
    ("vision", lambda m: m.classify(None), "image", "not NoneType"),
    ("vision", lambda m: m.classify(1.5), "image", "not float"),
    ("vision", lambda m: m.classify(-1), "image", "at least 0"),
    ("vision", lambda m: m.evaluate(split="nope"), "split", "test, dev"),
    ("vision", lambda m: m.evaluate(mc_samples="3"), "mc_samples", "integer"),
    ("text", lambda m: m.classify(5), "text", "not int"),
    ("text", lambda m: m.classify(None), "text", "not None"),
    ("text", lambda m: m.classify(["good film", None]), "text[1]", "not None"),
    ("text", lambda m: m.explain("good film", method="nope"), "method", "use one of"),
    ("text", lambda m: m.evaluate(split="nope"), "split", "test, dev"),
    ("graph", lambda m: m.explain_node(1.5), "node", "integer"),
    ("graph", lambda m: m.explain_node(None), "node", "integer"),
    ("graph", lambda m: m.explain_node(True), "node", "integer"),
    ("graph", lambda m: m.explain_node("1.5"), "node", "no node"),
    ("graph", lambda m: m.explain_node(10**6), "node", "nodes 0.."),
    ("graph", lambda m: m.evaluate(split="nope"), "split", "train, dev, test"),
    ("memnet", lambda m: m.answer(None, "where is mary?"), "story", "not None"),
    ("memnet", lambda m: m.answer([None], "where is mary?"), "story[0]", "not None"),
    ("memnet", lambda m: m.answer(STORY, 5), "question", "text"),
    ("memnet", lambda m: m.answer(STORY, "where " * 24_000), "question", "more than 1,000"),
    ("memnet", lambda m: m.answer(["the " * 1_001], "where?"), "story", "more than 1,000"),
    ("memnet", lambda m: m.explain(STORY, "where?", method=None), "method", "string"),
    ("memnet", lambda m: m.evaluate(split="nope"), "split", "train, valid, dev, test"),
    ("pointer", lambda m: m.solve(None), "points", "not None"),
    ("pointer", lambda m: m.solve(POINTS, beam=0), "beam", "at least 1"),
    ("pointer", lambda m: m.solve([[0.1, 0.2], [0.3, "x"], [0.5, 0.6]]), "points", "numbers"),
    ("pointer", lambda m: m.solve(POINTS, beam="2"), "beam", "integer"),
    ("pointer", lambda m: m.solve(POINTS, beam=10**6), "beam", "at most"),
    ("pointer", lambda m: m.evaluate(split="nope"), "split", "train, dev, test"),
    ("pointer", lambda m: m.evaluate(beam=0), "beam", "at least 1"),
    ("speech", lambda m: m.transcribe(None), "audio", "not NoneType"),
    ("speech", lambda m: m.transcribe(5), "audio", "not int"),
    ("speech", lambda m: m.transcribe([None, 0.1]), "audio", "finite samples"),
    ("speech", lambda m: m.transcribe(np.array([np.nan, 0.1])), "audio", "finite samples"),
    ("speech", lambda m: m.evaluate(split="nope"), "split", "train, dev, test"),
    ("hf", lambda m: m.bert.classify(None), "text", "not None"),
    ("hf", lambda m: m.bert.classify(5), "text", "not int"),
    ("hf", lambda m: m.bert.classify(["the cat", None]), "text[1]", "not None"),
    ("hf", lambda m: m.bert.classify("   "), "text", "non-blank"),
    ("hf", lambda m: m.bert.explain("the cat", method="nope"), "method", "use one of"),
    ("hf", lambda m: m.bert.explain("the cat", steps=0), "steps", "at least 1"),
    ("hf", lambda m: m.bert.explain("the cat", steps=10**6), "steps", "at most"),
    ("hf", lambda m: m.bert.explain("the cat", words=1), "words", "True or False"),
    ("hf", lambda m: m.bert.explain(None), "text", "not None"),
    ("hf", lambda m: m.bert.faithfulness("the cat", count=0), "count", "at least 1"),
    ("hf", lambda m: m.bert.faithfulness("the cat", permutations=-1), "permutations", "least 0"),
    ("hf", lambda m: m.bert.faithfulness("the cat", ig_steps=10**6), "ig_steps", "at most"),
    ("hf", lambda m: m.bert.faithfulness("the cat", seed=None), "seed", "integer"),
    ("hf", lambda m: m.bert.faithfulness([None]), "texts[0]", "not None"),
    ("hf", lambda m: m.bert.faithfulness(data=5), "data", "give a path"),
    ("hf", lambda m: m.vit.classify(None), "image", "not None"),
    ("hf", lambda m: m.vit.classify([1.5]), "image[0]", "not float"),
    ("hf", lambda m: m.vit.classify(b"not an image"), "image", "PNG or JPEG"),
    ("hf", lambda m: m.gpt2.generate(None), "prompts", "not None"),
    ("hf", lambda m: m.gpt2.generate("the cat", max_new_tokens=0), "max_new_tokens", "least 1"),
    ("hf", lambda m: m.gpt2.generate("the cat", max_new_tokens="3"), "max_new_tokens", "integer"),
    ("hf", lambda m: m.gpt2.generate("the cat", max_new_tokens=10**6), "max_new_tokens", "most"),
    ("hf", lambda m: m.gpt2.generate("the cat", beam=10**6), "beam", "at most"),
    ("hf", lambda m: m.gpt2.head_summary(part="cross"), "part", "use one of self"),
    ("hf", lambda m: m.gpt2.head_summary(period=1.5), "period", "integer"),
    ("hf", lambda m: m.gpt2.head_summary(seed="0"), "seed", "integer"),
    ("hf", lambda m: m.marian.translate([None]), "texts[0]", "not None"),
    ("hf", lambda m: m.marian.translate("the cat", beam=2.0), "beam", "integer"),
    ("hf", lambda m: m.marian.translate("the cat", max_new_tokens=True), "max_new_tokens", "int"),
    ("hf", lambda m: m.marian.alignment_error(None), "gold", "give a path"),
    ("hf", lambda m: m.marian.alignment_error("gold", layer=0), "layer", "at least 1"),
    ("hf", lambda m: m.marian.alignment_error("gold", count="2"), "count", "integer"),
]


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    """Tiny pretrained models of the hf family, built from configs and saved here: a BERT
    classifier, GPT-2, a Marian translator and a ViT."""
    pytest.importorskip("transformers", reason="no transformers (pip install attnkit[hf])")
    from types import SimpleNamespace

    from attnkit.families.hf.tiny import save_tiny

    root = tmp_path_factory.mktemp("hf")
    kinds = ("bert", "gpt2", "marian", "vit")
    loaded = {k: attnkit.load(f"hf:{save_tiny(k, root / k)}", device="cpu") for k in kinds}
    return SimpleNamespace(**loaded)


@pytest.mark.parametrize(
    ("family", "call", "name", "needle"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_a_bad_argument_is_one_input_error_naming_it(request, family, call, name, needle):
    model = request.getfixturevalue("hf" if family == "hf" else "models")
    with pytest.raises(InputError) as caught:
        call(model if family == "hf" else model[family])
    message = str(caught.value)
    assert caught.value.name == name and needle in message and "\n" not in message, message


@pytest.mark.parametrize("path", [None, 5, [None], ["zoo:numbers-bahdanau", 3]])
def test_load_refuses_what_is_no_path(path):
    with pytest.raises(InputError, match="give a path") as caught:
        attnkit.load(path)
    assert caught.value.name.startswith("path")


def test_what_the_checks_let_through_still_answers(models):
    assert models["graph"].explain_node(np.int64(3)).index == 3
    assert models["graph"].explain_node("3").index == 3  # a name of the data (or a typed index)
    assert len(models["pointer"].solve(np.array(POINTS), beam=np.int64(2)).order) >= 1
    assert models["memnet"].answer(STORY, "where is mary?").sentences == STORY
    assert len(models["seq2seq"].translate(("vier", "zwei"), beam=2, n_best=2)) == 2


def test_every_family_has_its_cases():
    """A family that registers must add its cases here: those of checkpoints and the pretrained
    models' family, loaded by a scheme."""
    from attnkit.families import FAMILIES

    assert set(FAMILIES) == {family for family, *_ in CASES}
