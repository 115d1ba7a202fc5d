"""Phrase-translation task: agreement, adjective order, one target per source, gold word links
that follow the grammar, the showcase held out, and the task's config keys."""

import pytest

from attnkit.data.tasks import lexicon, phrases
from attnkit.data.tasks.gold import gold_aligner
from attnkit.data.tasks.registry import build_splits, data_from_dict
from attnkit.errors import ConfigError


@pytest.fixture(scope="module", params=phrases.DIRECTIONS, ids=lambda d: f"{d[0]}-{d[1]}")
def splits(request):
    src, tgt = request.param
    return request.param, phrases.generate(seed=3, src_lang=src, tgt_lang=tgt, n_train=600)


def _all(s):
    return s.train + s.dev + s.test


def test_the_classic_examples_are_written_as_the_papers_show_them():
    dog, area = phrases.SHOWCASE
    assert phrases.text(dog, "en") == "a beautiful dog"
    assert phrases.text(dog, "es") == "un perro bonito"
    assert phrases.text(area, "fr") == "la zone économique européenne"
    assert phrases.text(area, "en") == "the European economic area"
    assert phrases.text(area, "es") == "la zona económica europea"


def test_agreement_articles_and_verbs():
    def np(det, noun, adjs=(), plural=False):
        nouns = [n.en[0] for n in lexicon.NOUNS]
        adjectives = [a.en for a in lexicon.ADJECTIVES]
        return phrases.NounPhrase(
            det, nouns.index(noun), tuple(adjectives.index(a) for a in adjs), plural
        )

    assert phrases.text(phrases.Phrase(np("a", "area")), "en") == "an area"
    assert phrases.text(phrases.Phrase(np("a", "car", ["economic"])), "en") == "an economic car"
    assert phrases.text(phrases.Phrase(np("a", "car", ["European"])), "en") == "a European car"
    assert phrases.text(phrases.Phrase(np("this", "car", ["white"], True)), "fr") == (
        "ces voitures blanches"
    )
    assert phrases.text(phrases.Phrase(np("my", "house", ["red"])), "fr") == "ma maison rouge"
    sentence = phrases.Phrase(np("the", "horse", plural=True), "have", np("a", "box", ["blue"]))
    assert phrases.text(sentence, "en") == "the horses have a blue box"
    assert phrases.text(sentence, "es") == "los caballos tienen una caja azul"
    assert phrases.text(sentence, "fr") == "les chevaux ont une boîte bleue"


def test_sizes_are_exact_and_splits_disjoint_with_the_showcase_in_test(splits):
    (src, tgt), s = splits
    assert (len(s.train), len(s.dev), len(s.test)) == (600, 500, 500)
    train, dev, test = ({a for a, _ in part} for part in (s.train, s.dev, s.test))
    assert not train & dev and not train & test and not dev & test
    showcase = {phrases.text(p, src) for p in phrases.SHOWCASE}
    assert showcase <= test
    pairs = _all(s)
    assert len({a for a, _ in pairs}) == len(pairs)


def test_every_pair_parses_and_its_gold_links_join_words_of_one_meaning(splits):
    (src, tgt), s = splits
    for source, target in _all(s):
        gold = phrases.gold_alignment(source, target, src, tgt)
        assert gold is not None, (source, target)
        out, inp = target.split(), source.split()
        assert sorted(j for j, _ in gold.sure) == list(range(len(out)))  # one sure link each
        assert sorted(i for _, i in gold.sure) == list(range(len(inp)))  # to every source word
        phrase = phrases.parse(source, src)
        src_roles = [role[1:2] for _, role in phrases.render(phrase, src)]
        tgt_roles = [role[1:2] for _, role in phrases.render(phrase, tgt)]
        for j, i in gold.possible - gold.sure:  # agreement: a determiner or adjective, its noun
            assert src_roles[i] == ("noun",) and tgt_roles[j] in (("det",), ("adj",)), (
                source,
                j,
                i,
            )


def test_adjectives_cross_the_noun_and_several_reverse():
    """In the links: the English noun comes last, the Romance noun second, and two adjectives
    swap places (the mirror order), the whole point of the task."""
    dog, area = phrases.SHOWCASE
    dog_links = phrases.gold_links(dog, "en", "es")
    assert sorted(dog_links.sure) == [(0, 0), (1, 2), (2, 1)]
    assert sorted(dog_links.possible - dog_links.sure) == [(0, 2), (2, 2)]  # un, bonito: dog's
    area_links = phrases.gold_links(area, "fr", "en")
    assert sorted(area_links.sure) == [(0, 0), (1, 3), (2, 2), (3, 1)]
    assert sorted(area_links.possible - area_links.sure) == [(0, 1)]  # "the" agrees with "zone"


def test_a_wrong_output_or_a_foreign_source_has_no_gold():
    assert phrases.gold_alignment("a beautiful dog", "un perro bonita", "en", "es") is None
    assert phrases.gold_alignment("a beautiful dog", "un perro", "en", "es") is None
    assert phrases.gold_alignment("dog beautiful a", "un perro bonito", "en", "es") is None
    assert phrases.gold_alignment("an beautiful dog", "un perro bonito", "en", "es") is None
    assert phrases.gold_alignment("the dog sees", "el perro ve", "en", "es") is None


def test_same_seed_same_splits_and_bad_arguments_are_refused():
    a = phrases.generate(seed=1, n_train=50, n_dev=10, n_test=10)
    assert a == phrases.generate(seed=1, n_train=50, n_dev=10, n_test=10)
    assert a != phrases.generate(seed=2, n_train=50, n_dev=10, n_test=10)
    with pytest.raises(ValueError, match="es->fr is not a direction"):
        phrases.generate(src_lang="es", tgt_lang="fr")
    with pytest.raises(ValueError, match="cannot draw"):
        phrases.generate(max_adjectives=0, sentence_share=0.0, n_train=300)


def test_the_config_section_builds_splits_and_word_level_gold():
    cfg = data_from_dict(
        {"task": "phrases", "src_lang": "fr", "tgt_lang": "en", "train_size": 40, "dev_size": 5}
    )
    splits = build_splits(cfg)
    assert len(splits.train) == 40 and splits.test[1][1] == "the European economic area"
    aligner = gold_aligner(cfg)
    assert aligner(*splits.test[1]).sure == {(0, 0), (1, 3), (2, 2), (3, 1)}
    chars = data_from_dict({"task": "phrases", "src_level": "char", "tgt_level": "char"})
    assert gold_aligner(chars) is None  # the links are between words


@pytest.mark.parametrize(
    "section, message",
    [
        ({"src_lang": "es", "tgt_lang": "fr"}, "data.tgt_lang: es->fr is not a direction"),
        ({"src_lang": "de"}, "data.src_lang"),
        ({"max_adjectives": 4}, "data.max_adjectives: must be an integer from 0 to 3"),
        ({"sentence_share": 1.5}, "data.sentence_share: must be a number from 0 to 1"),
        ({"test_size": 1}, "data.test_size"),
        ({"languages": ["en"]}, "not a key of task phrases"),
    ],
)
def test_bad_config_values_are_one_clear_line(section, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        data_from_dict({"task": "phrases", **section})


@pytest.mark.slow
def test_a_phrases_model_trains_translates_and_carries_word_gold_links(tmp_path, capsys):
    """The task end to end through the API, the command line and the explorer's server: a tiny
    model trained for one epoch; its explanation of the showcase, forced on the reference,
    outlines the grammar's word links (whatever the weights say)."""
    import attnkit
    from attnkit.cli import main

    config = {
        "name": "phrases-tiny",
        "data": {"task": "phrases", "train_size": 200, "dev_size": 20, "test_size": 20},
        "model": {"embedding_dim": 8, "encoder_hidden": 8, "decoder_hidden": 16},
        "train": {"epochs": 1, "batch_size": 32, "threads": 1, "progress": False},
    }
    run = attnkit.train(config, output_dir=tmp_path / "run")
    model = attnkit.load(run.best)
    e = model.explain("la zone économique européenne", reference="the European economic area")
    assert e.source_tokens[:4] == ["la", "zone", "économique", "européenne"]
    assert {(1, 3), (2, 2), (3, 1), (0, 0), (0, 1)} == set(e.gold)
    assert main(["translate", "--model", str(run.best), "un chien magnifique"]) == 0
    assert capsys.readouterr().out.strip()  # one output line, whatever it says
    from fastapi.testclient import TestClient

    from attnkit.serve.app import ServeSettings, create_app

    with TestClient(create_app(ServeSettings(models=[run.best]))) as client:
        (info,) = client.get("/v1/models").json()["models"]
    assert info["task"] == "phrases" and info["has_gold"] is True  # the explorer outlines them
