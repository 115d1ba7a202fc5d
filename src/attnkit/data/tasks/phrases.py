"""Phrase translation where adjectives move: the classic attention pictures, generated.

A small grammar over the lexicon of :mod:`attnkit.data.tasks.lexicon` writes the same meaning
in English, Spanish and French, word level, with no download:

* a noun phrase, ``determiner adjective* noun`` in English and ``determiner noun adjective*``
  in Spanish and French, with the Romance adjectives in the mirror order:
  ``"a beautiful dog" -> "un perro bonito"`` (the adjective crosses the noun) and
  ``"la zone économique européenne" -> "the European economic area"`` (the order reverses);
* or a sentence, ``noun-phrase verb noun-phrase``, the verb agreeing with its subject.

Determiners, adjectives and verbs agree in gender and number. The directions are English to
and from Spanish or French (``src_lang``/``tgt_lang``). Gold links come from the grammar: each
word of the output is linked to the source word that plays the same part (the subject's
determiner, the object's noun, the adjective of the same meaning, the verb), one sure link
each; a determiner, and a Spanish or French adjective, is also possibly linked to the noun whose
gender and number it takes. Two phrases, :data:`SHOWCASE`, are always held out in the test
split: the pictures show a model translating them without having seen them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from attnkit.data.tasks import lexicon
from attnkit.data.tasks.alignment import Alignment
from attnkit.data.tasks.base import Pair, Splits

LANGUAGES = lexicon.LANGS
DIRECTIONS = (("en", "es"), ("es", "en"), ("fr", "en"), ("en", "fr"))
"""The (source, target) pairs of the task: English and Spanish or French, either way."""
MAX_ADJECTIVES = 3  # one per class at most, in the classes' order


@dataclass(frozen=True)
class NounPhrase:
    """What a noun phrase means: indices into lexicon.NOUNS / ADJECTIVES (adjectives in
    English order), the determiner's name and whether it is plural."""

    determiner: str
    noun: int
    adjectives: tuple[int, ...]
    plural: bool


@dataclass(frozen=True)
class Phrase:
    """A noun phrase alone (``verb`` None) or a sentence ``subject verb obj``."""

    subject: NounPhrase
    verb: str | None = None
    obj: NounPhrase | None = None


def _noun_index(english: str) -> int:
    return next(i for i, n in enumerate(lexicon.NOUNS) if n.en[0] == english)


def _adjective_index(english: str) -> int:
    return next(i for i, a in enumerate(lexicon.ADJECTIVES) if a.en == english)


SHOWCASE = (
    Phrase(NounPhrase("a", _noun_index("dog"), (_adjective_index("beautiful"),), False)),
    Phrase(
        NounPhrase(
            "the",
            _noun_index("area"),
            (_adjective_index("European"), _adjective_index("economic")),
            False,
        )
    ),
)
"""The two famous examples, held out of training: "a beautiful dog" ("un perro bonito") and
"the European economic area" ("la zone économique européenne")."""


def language_problem(src_lang: str, tgt_lang: str) -> str | None:
    """Why ``src_lang -> tgt_lang`` is not a direction of the task, or None."""
    if (src_lang, tgt_lang) in DIRECTIONS:
        return None
    valid = ", ".join(f"{s}->{t}" for s, t in DIRECTIONS)
    return f"{src_lang}->{tgt_lang} is not a direction of the phrases task (valid: {valid})"


def _slot(plural: bool, feminine: bool) -> int:
    """Index into a (masc sg, fem sg, masc pl, fem pl) tuple."""
    return 2 * plural + feminine


def _noun_phrase(np: NounPhrase, lang: str, part: str) -> list[tuple[str, tuple]]:
    """``(word, role)`` of one noun phrase; the role names what the word means in the phrase
    (the same in every language), so equal roles are gold links."""
    noun = lexicon.NOUNS[np.noun]
    det_forms = lexicon.DETERMINERS[np.determiner][lang]
    det_role, noun_role = (part, "det"), (part, "noun")
    noun_word = getattr(noun, lang)[np.plural]
    if lang == "en":
        adjs = [(lexicon.ADJECTIVES[a].en, (part, "adj", a)) for a in np.adjectives]
        det = det_forms[np.plural]
        following = (adjs[0][0] if adjs else noun_word) if np.determiner == "a" else ""
        if following[:1].lower() in tuple("aeiou") and following not in lexicon.AN_EXCEPTIONS:
            det = "an"
        return [(det, det_role), *adjs, (noun_word, noun_role)]
    feminine = getattr(noun, f"{lang}_gender") == "f"
    slot = _slot(np.plural, feminine)
    adjs = [
        (getattr(lexicon.ADJECTIVES[a], lang)[slot], (part, "adj", a))
        for a in reversed(np.adjectives)
    ]
    return [(det_forms[slot], det_role), (noun_word, noun_role), *adjs]


def render(phrase: Phrase, lang: str) -> list[tuple[str, tuple]]:
    """The words of ``phrase`` in ``lang``, each with its role (see :func:`gold_links`)."""
    words = _noun_phrase(phrase.subject, lang, "subject")
    if phrase.verb is not None:
        verb = lexicon.VERBS[phrase.verb][lang][phrase.subject.plural]
        words += [(verb, ("verb",)), *_noun_phrase(phrase.obj, lang, "object")]
    return words


def text(phrase: Phrase, lang: str) -> str:
    """``phrase`` written in ``lang``: words joined by single spaces."""
    return " ".join(word for word, _ in render(phrase, lang))


def gold_links(phrase: Phrase, src_lang: str, tgt_lang: str) -> Alignment:
    """Output word j linked to the source word i of the same meaning (a sure link, one per
    word), and possibly to the noun it agrees with: a determiner takes its noun's number
    (``this``/``these``) and in Spanish and French its gender, and so does a Spanish or French
    adjective (``bonito``/``bonita``): those links are possible, not sure."""
    source = [role for _, role in render(phrase, src_lang)]
    target = [role for _, role in render(phrase, tgt_lang)]
    sure = {(j, source.index(role)) for j, role in enumerate(target) if role in source}
    agreeing = {
        (j, source.index((role[0], "noun")))
        for j, role in enumerate(target)
        if role[-1] == "det" or (tgt_lang != "en" and role[1:2] == ("adj",))
    }
    return Alignment(frozenset(sure), frozenset(sure | agreeing))


def _sample_np(rng: random.Random, max_adjectives: int, animate: bool) -> NounPhrase:
    nouns = [i for i, n in enumerate(lexicon.NOUNS) if animate or not n.animate]
    noun = rng.choice(nouns)
    plural = rng.random() < 0.3
    determiner = rng.choice([d for d in lexicon.DETERMINERS if not (plural and d == "a")])
    classes: dict[int, list[int]] = {}
    for i, adj in enumerate(lexicon.ADJECTIVES):
        classes.setdefault(adj.order, []).append(i)
    count = rng.randint(0, max_adjectives)
    chosen = sorted(rng.sample(sorted(classes), count))
    return NounPhrase(determiner, noun, tuple(rng.choice(classes[c]) for c in chosen), plural)


def sample_phrase(rng: random.Random, max_adjectives: int, sentence_share: float) -> Phrase:
    """One random phrase: a sentence with probability ``sentence_share`` (its object is never
    animate: Spanish would need ``a``), else a noun phrase with at least one adjective."""
    if rng.random() < sentence_share:
        subject = _sample_np(rng, max_adjectives, animate=True)
        verb = rng.choice(sorted(lexicon.VERBS))
        return Phrase(subject, verb, _sample_np(rng, max_adjectives, animate=False))
    while True:
        np = _sample_np(rng, max_adjectives, animate=True)
        if np.adjectives or max_adjectives == 0:
            return Phrase(np)


def generate(
    seed: int = 0,
    src_lang: str = "en",
    tgt_lang: str = "es",
    n_train: int = 8000,
    n_dev: int = 500,
    n_test: int = 500,
    max_adjectives: int = 2,
    sentence_share: float = 0.3,
) -> Splits:
    """Phrase-translation splits of distinct sources, the :data:`SHOWCASE` phrases in test.

    Raises ValueError for a direction the task lacks, ``max_adjectives`` outside
    0..:data:`MAX_ADJECTIVES`, ``sentence_share`` outside 0..1, or sizes the grammar cannot
    fill with distinct phrases.
    """
    problem = language_problem(src_lang, tgt_lang)
    if problem:
        raise ValueError(problem)
    if not 0 <= max_adjectives <= MAX_ADJECTIVES:
        raise ValueError(f"max_adjectives must be 0..{MAX_ADJECTIVES}, got {max_adjectives}")
    if not 0.0 <= sentence_share <= 1.0:
        raise ValueError(f"sentence_share must be between 0 and 1, got {sentence_share}")
    rng = random.Random(seed)
    showcase = [(text(p, src_lang), text(p, tgt_lang)) for p in SHOWCASE]
    seen = {src for src, _ in showcase}
    wanted = n_train + n_dev + max(0, n_test - len(showcase))
    pairs: list[Pair] = []
    tries = 0
    while len(pairs) < wanted:
        tries += 1
        if tries > 20 * wanted + 1000:
            raise ValueError(
                f"cannot draw {wanted} distinct phrases with max_adjectives={max_adjectives} and "
                f"sentence_share={sentence_share}: only {len(pairs)} found"
            )
        phrase = sample_phrase(rng, max_adjectives, sentence_share)
        src = text(phrase, src_lang)
        if src not in seen:
            seen.add(src)
            pairs.append((src, text(phrase, tgt_lang)))
    extra = wanted - n_train - n_dev  # test phrases beside the showcase
    return Splits(
        train=pairs[extra + n_dev :],
        dev=pairs[extra : extra + n_dev],
        test=showcase + pairs[:extra],
    )


def _forms(lang: str) -> dict[str, dict[str, tuple]]:
    """Word -> what it can be, per word class, for parsing ``lang``."""
    dets = {}
    for name, by_lang in lexicon.DETERMINERS.items():
        for form in by_lang[lang]:
            if form:
                dets[form] = name
    if lang == "en":
        dets["an"] = "a"
    nouns = {
        getattr(n, lang)[pl]: (i, bool(pl)) for i, n in enumerate(lexicon.NOUNS) for pl in (0, 1)
    }
    adjs = {}
    for i, adj in enumerate(lexicon.ADJECTIVES):
        for form in [adj.en] if lang == "en" else getattr(adj, lang):
            adjs[form] = i
    verbs = {form: name for name, by_lang in lexicon.VERBS.items() for form in by_lang[lang]}
    return {"det": dets, "noun": nouns, "adj": adjs, "verb": verbs}


_FORMS = {lang: _forms(lang) for lang in LANGUAGES}


def _parse_np(words: list[str], at: int, lang: str) -> tuple[NounPhrase, int] | None:
    forms = _FORMS[lang]
    if at >= len(words) or words[at] not in forms["det"]:
        return None
    det, at = forms["det"][words[at]], at + 1
    adjs = []
    if lang == "en":
        while at < len(words) and words[at] in forms["adj"]:
            adjs.append(forms["adj"][words[at]])
            at += 1
    if at >= len(words) or words[at] not in forms["noun"]:
        return None
    noun, plural = forms["noun"][words[at]]
    at += 1
    if lang != "en":
        while at < len(words) and words[at] in forms["adj"]:
            adjs.insert(0, forms["adj"][words[at]])
            at += 1
    return NounPhrase(det, noun, tuple(adjs), plural), at


def parse(source: str, lang: str) -> Phrase | None:
    """The phrase that ``source`` writes in ``lang``, or None where the grammar does not write
    ``source`` (the phrase parsed is written again and compared)."""
    words = source.split()
    first = _parse_np(words, 0, lang)
    if first is None:
        return None
    subject, at = first
    phrase = Phrase(subject)
    if at < len(words):
        verb = _FORMS[lang]["verb"].get(words[at])
        rest = _parse_np(words, at + 1, lang) if verb else None
        if rest is None or rest[1] != len(words):
            return None
        phrase = Phrase(subject, verb, rest[0])
    return phrase if text(phrase, lang) == " ".join(words) == source else None


def gold_alignment(source: str, target: str, src_lang: str, tgt_lang: str) -> Alignment | None:
    """Word links of ``source -> target`` (see :func:`gold_links`), or None where ``target`` is
    not the grammar's translation of ``source`` (a model's wrong output)."""
    phrase = parse(source, src_lang)
    if phrase is None or text(phrase, tgt_lang) != target:
        return None
    return gold_links(phrase, src_lang, tgt_lang)
