"""A user's text (command-line arguments, stdin, files, requests) as valid UTF-8.

Text from outside is never trusted to decode: bytes that are not UTF-8, and the lone surrogates
that stand for them in ``argv`` and surrogateescape streams, become U+FFFD, with one warning
naming the items they were in.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

from attnkit.data.vocab import Vocab


def read_inputs(items: Iterable[str | bytes]) -> list[str]:
    """Lines (bytes or str) without their line endings; used for stdin and files.

    Bytes that are not UTF-8 become U+FFFD, with one warning naming the lines; a byte order mark
    at the start is dropped (as the training files' reader does).
    """
    lines = [line.rstrip("\r\n") for line in as_utf8(items, "line")]
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    return lines


def as_utf8(items: Iterable[str | bytes], what: str) -> list[str]:
    """``items`` as valid UTF-8 text: undecodable bytes (or the lone surrogates that stand for
    them in argv and surrogateescape streams) become U+FFFD, warned about once, by item number."""
    texts, bad = [], []
    for number, item in enumerate(items, start=1):
        if isinstance(item, str):
            try:
                item.encode("utf-8")
                texts.append(item)
                continue
            except UnicodeEncodeError:
                try:  # back to the bytes Python could not decode, then decoded again
                    item = item.encode("utf-8", "surrogateescape")
                except UnicodeEncodeError:  # other lone surrogates: no bytes to recover
                    item = item.encode("utf-8", "surrogatepass")
        try:
            texts.append(item.decode("utf-8"))
        except UnicodeDecodeError:
            texts.append(item.decode("utf-8", "replace"))
            bad.append(number)
    if bad:
        more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
        shown = ", ".join(map(str, bad[:10])) + more
        warnings.warn(
            f"{what}{'s' if len(bad) > 1 else ''} {shown}: bytes that are not UTF-8 were "
            "replaced by U+FFFD",
            stacklevel=3,
        )
    return texts


def unknown_words(name: str, tokens: Sequence[str], vocab: Vocab, copied: bool = False) -> None:
    """One warning for input ``name`` naming the tokens the vocabulary has never seen (a copying
    model, ``copied``, can still write them)."""
    unknown = list(dict.fromkeys(t for t in tokens if t not in vocab.stoi))
    if unknown:
        named = ", ".join(repr(t) for t in unknown[:10]) + (", ..." if len(unknown) > 10 else "")
        how = "read as <unk> (and may be copied)" if copied else "read as <unk>"
        warnings.warn(f"{name}: never seen in training, {how}: {named}", stacklevel=3)
