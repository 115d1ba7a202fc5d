"""Gold alignments of the generated tasks: which source characters name each output character.

Both generated tasks are character level, so a link joins output character ``j`` to source
character ``i``. The links are derived from the generator itself, never annotated by hand:

* **Numbers** (:func:`attnkit.data.tasks.numbers.gold_alignment`): a *minimal pair* rule. For
  each digit of the number, every other value of that digit is written out with ``num2words``;
  the characters of the spelled-out side that change (:func:`changed_positions`: ``difflib``
  word by word, then letter by letter inside a word replaced by one word) are the characters
  that digit names. ``siebenundneunzig`` (97): changing the 7 rewrites ``sieben``, changing the
  9 rewrites ``neunzig``; ``und`` disappears when either digit becomes 0, so it is named by
  both. A zero is named by nothing; a 1 no word writes (French ``cent``) by the word it
  multiplies.
* **Dates** (:func:`attnkit.data.tasks.dates.gold_alignment`): the CLDR pattern that wrote the
  source gives the span of its day, month and year fields; each output digit of the ISO date is
  named by its field's span (a numeric field: digit by digit, right-aligned).

**Sure and possible links** (Och & Ney 2003): every link is *possible*; a link is *sure* when it
is its output character's only link, i.e. one source character alone determines it (``4`` in
``4. März`` -> the ``4`` of ``-04``, the ``s`` of ``sieben`` <- the source ``7``). An output
character named by several source characters (a digit named by the word ``neunzig``, the
``vingt`` of ``quatre-vingt-dix`` that depends on the tens and the units) has possible links
only. Output characters that no source character names (the ``-`` of an ISO date, the ``0`` of
``90``, implied by the absence of a units word) have no links and are left out of the scores.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

Link = tuple[int, int]
"""``(output position j, source position i)``, character indices."""


@dataclass(frozen=True)
class Alignment:
    """Gold links of one pair; ``sure`` is a subset of ``possible``."""

    sure: frozenset[Link]
    possible: frozenset[Link]

    @classmethod
    def from_possible(cls, links: set[Link]) -> Alignment:
        """Apply the sure rule: a link is sure when it is its output position's only link."""
        count: dict[int, int] = {}
        for j, _ in links:
            count[j] = count.get(j, 0) + 1
        sure = frozenset((j, i) for j, i in links if count[j] == 1)
        return cls(sure, frozenset(links))

    def linked_outputs(self) -> list[int]:
        """Output positions with at least one link, in order."""
        return sorted({j for j, _ in self.possible})

    def sources_of(self, j: int) -> set[int]:
        """Source positions linked to output position ``j``."""
        return {i for jj, i in self.possible if jj == j}

    def to_json(self) -> dict:
        return {"sure": sorted(map(list, self.sure)), "possible": sorted(map(list, self.possible))}


def changed_positions(original: str, variant: str, grown_words: bool = True) -> set[int]:
    """Positions of ``original`` that ``variant`` rewrites or removes (text the variant only
    inserts changes nothing of the original).

    The two are compared word by word first (``difflib`` over runs of letters and the text
    between them), so a letter never matches across words; where one word is replaced by one
    word (a German compound, ``ciento`` -> ``doscientos``), the letters within it are compared,
    and with ``grown_words`` a word that only gained letters counts as rewritten as a whole."""
    old_words, new_words = _words(original), _words(variant)
    matcher = difflib.SequenceMatcher(
        None, [w for w, _ in old_words], [w for w, _ in new_words], autojunk=False
    )
    changed: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "delete" or (tag == "replace" and (i2 - i1, j2 - j1) != (1, 1)):
            for word, start in old_words[i1:i2]:
                changed.update(range(start, start + len(word)))
        elif tag == "replace":
            (word, start), (other, _) = old_words[i1], new_words[j1]
            inside = _changed_letters(word, other)
            if not inside and grown_words:
                inside = set(range(len(word)))
            changed.update(start + p for p in inside)
    return changed


def _words(text: str) -> list[tuple[str, int]]:
    """``text`` cut into runs of letters and the runs between them, with their start."""
    return [(m.group(), m.start()) for m in re.finditer(r"\w+|\W+", text)]


def _changed_letters(word: str, other: str) -> set[int]:
    matcher = difflib.SequenceMatcher(None, word, other, autojunk=False)
    changed: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            changed.update(range(i1, i2))
    return changed


def insertion_points(original: str, variant: str) -> list[int]:
    """Positions of ``original`` before which ``variant`` only inserts text."""
    matcher = difflib.SequenceMatcher(None, original, variant, autojunk=False)
    return [i1 for tag, i1, _, _, _ in matcher.get_opcodes() if tag == "insert"]


def word_at(text: str, position: int) -> set[int]:
    """The positions of the word (run of letters) that starts at or after ``position``."""
    match = re.compile(r"\w+").search(text, position)
    return set(range(match.start(), match.end())) if match else set()


def whole_words(text: str, positions: set[int]) -> set[int]:
    """``positions`` with the gaps inside each word of ``text`` filled: a word is named as a whole,
    even where a letter of it happens to match the variant (``noventa`` vs ``sesenta`` keep their
    ``e``). Words are runs of letters; a German compound is one word."""
    filled = set(positions)
    for word in re.finditer(r"\w+", text):
        inside = sorted(p for p in positions if word.start() <= p < word.end())
        if inside:
            filled.update(range(inside[0], inside[-1] + 1))
    return filled
