"""The bilingual lexicon of the ``phrases`` task: English, Spanish and French words with the
features the grammar of :mod:`attnkit.data.tasks.phrases` agrees them by.

Every word is chosen so that the grammar stays small and exact: French nouns start with a
consonant (no elided ``l'``), every Spanish and French adjective follows its noun (no ``beau``,
``petit``), animate nouns are never objects (no Spanish personal ``a``), and plurals are
written out where a rule would get them wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

LANGS = ("en", "es", "fr")


@dataclass(frozen=True)
class Noun:
    """A noun: (singular, plural) per language and the Spanish and French genders (m or f)."""

    en: tuple[str, str]
    es: tuple[str, str]
    fr: tuple[str, str]
    es_gender: str
    fr_gender: str
    animate: bool = False


@dataclass(frozen=True)
class Adjective:
    """An adjective: English form; (masc sg, fem sg, masc pl, fem pl) in Spanish and French;
    its class, which fixes the order of several (English: ascending; Spanish and French: the
    mirror image, so "the European economic area" is "la zone économique européenne")."""

    en: str
    es: tuple[str, str, str, str]
    fr: tuple[str, str, str, str]
    order: int  # 1 opinion, 2 age, 3 shape, 4 colour, 5 origin, 6 type


def _es(masc: str, fem: str) -> tuple[str, str, str, str]:
    """Spanish forms: a vowel takes -s, a consonant -es."""
    return masc, fem, *(w + ("s" if w[-1] in "aeiou" else "es") for w in (masc, fem))


def _fr(masc: str, fem: str) -> tuple[str, str, str, str]:
    """French forms: -s, except after s or x."""
    return masc, fem, *(w if w[-1] in "sx" else w + "s" for w in (masc, fem))


def _noun(en, es, es_g, fr, fr_g, animate=False, en_pl=None, es_pl=None, fr_pl=None) -> Noun:
    return Noun(
        (en, en_pl or en + "s"),
        (es, es_pl or es + ("s" if es[-1] in "aeiou" else "es")),
        (fr, fr_pl or fr + "s"),
        es_g,
        fr_g,
        animate,
    )


NOUNS: tuple[Noun, ...] = (
    _noun("dog", "perro", "m", "chien", "m", animate=True),
    _noun("cat", "gato", "m", "chat", "m", animate=True),
    _noun("horse", "caballo", "m", "cheval", "m", animate=True, fr_pl="chevaux"),
    _noun("house", "casa", "f", "maison", "f"),
    _noun("area", "zona", "f", "zone", "f"),
    _noun("car", "coche", "m", "voiture", "f"),
    _noun("book", "libro", "m", "livre", "m"),
    _noun("table", "mesa", "f", "table", "f"),
    _noun("city", "ciudad", "f", "ville", "f", en_pl="cities"),
    _noun("flower", "flor", "f", "fleur", "f"),
    _noun("door", "puerta", "f", "porte", "f"),
    _noun("window", "ventana", "f", "fenêtre", "f"),
    _noun("garden", "jardín", "m", "jardin", "m", es_pl="jardines"),
    _noun("market", "mercado", "m", "marché", "m"),
    _noun("policy", "política", "f", "politique", "f", en_pl="policies"),
    _noun("river", "río", "m", "rivière", "f"),
    _noun("shirt", "camisa", "f", "chemise", "f"),
    _noun("box", "caja", "f", "boîte", "f", en_pl="boxes"),
    _noun("bank", "banco", "m", "banque", "f"),
    _noun("road", "carretera", "f", "route", "f"),
    _noun("community", "comunidad", "f", "communauté", "f", en_pl="communities"),
    _noun("mountain", "montaña", "f", "montagne", "f"),
    _noun("letter", "carta", "f", "lettre", "f"),
    _noun("chair", "silla", "f", "chaise", "f"),
)

ADJECTIVES: tuple[Adjective, ...] = (
    Adjective("beautiful", _es("bonito", "bonita"), _fr("magnifique", "magnifique"), 1),
    Adjective("famous", _es("famoso", "famosa"), _fr("célèbre", "célèbre"), 1),
    Adjective("strange", _es("extraño", "extraña"), _fr("étrange", "étrange"), 1),
    Adjective("expensive", _es("caro", "cara"), _fr("cher", "chère"), 1),
    Adjective("modern", _es("moderno", "moderna"), _fr("moderne", "moderne"), 2),
    Adjective("round", _es("redondo", "redonda"), _fr("rond", "ronde"), 3),
    Adjective("heavy", _es("pesado", "pesada"), _fr("lourd", "lourde"), 3),
    Adjective("black", _es("negro", "negra"), _fr("noir", "noire"), 4),
    Adjective("white", _es("blanco", "blanca"), _fr("blanc", "blanche"), 4),
    Adjective("red", _es("rojo", "roja"), _fr("rouge", "rouge"), 4),
    Adjective("green", _es("verde", "verde"), _fr("vert", "verte"), 4),
    Adjective("blue", _es("azul", "azul"), _fr("bleu", "bleue"), 4),
    Adjective("yellow", _es("amarillo", "amarilla"), _fr("jaune", "jaune"), 4),
    Adjective("European", _es("europeo", "europea"), _fr("européen", "européenne"), 5),
    Adjective("Spanish", _es("español", "española"), _fr("espagnol", "espagnole"), 5),
    Adjective("Italian", _es("italiano", "italiana"), _fr("italien", "italienne"), 5),
    Adjective("economic", _es("económico", "económica"), _fr("économique", "économique"), 6),
    Adjective("political", _es("político", "política"), _fr("politique", "politique"), 6),
    Adjective("public", _es("público", "pública"), _fr("public", "publique"), 6),
    Adjective("industrial", _es("industrial", "industrial"), _fr("industriel", "industrielle"), 6),
)

DETERMINERS: dict[str, dict[str, tuple[str, ...]]] = {
    # per language: English (singular, plural); Spanish and French (m sg, f sg, m pl, f pl).
    # "a" has no plural: the grammar draws it for singular nouns only.
    "the": {
        "en": ("the", "the"),
        "es": ("el", "la", "los", "las"),
        "fr": ("le", "la", "les", "les"),
    },
    "a": {"en": ("a", ""), "es": ("un", "una", "", ""), "fr": ("un", "une", "", "")},
    "this": {
        "en": ("this", "these"),
        "es": ("este", "esta", "estos", "estas"),
        "fr": ("ce", "cette", "ces", "ces"),
    },
    "my": {"en": ("my", "my"), "es": ("mi", "mi", "mis", "mis"), "fr": ("mon", "ma", "mes", "mes")},
}

VERBS: dict[str, dict[str, tuple[str, str]]] = {
    # per language: (third person singular, plural)
    "see": {"en": ("sees", "see"), "es": ("ve", "ven"), "fr": ("voit", "voient")},
    "buy": {"en": ("buys", "buy"), "es": ("compra", "compran"), "fr": ("achète", "achètent")},
    "find": {
        "en": ("finds", "find"),
        "es": ("encuentra", "encuentran"),
        "fr": ("trouve", "trouvent"),
    },
    "want": {"en": ("wants", "want"), "es": ("quiere", "quieren"), "fr": ("veut", "veulent")},
    "have": {"en": ("has", "have"), "es": ("tiene", "tienen"), "fr": ("a", "ont")},
}

AN_EXCEPTIONS = frozenset({"European"})
"""English words that start with a vowel letter but not a vowel sound: "a European area"."""
