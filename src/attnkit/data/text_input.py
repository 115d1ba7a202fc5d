"""A user's text (command-line arguments, stdin, files, requests) as valid UTF-8, and as the
source a seq2seq model reads (:class:`SourceReader`: checked, tokenized and encoded once).

Text from outside is never trusted to decode: bytes that are not UTF-8, and the lone surrogates
that stand for them in ``argv`` and surrogateescape streams, become U+FFFD, with one warning
naming the items they were in.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from attnkit.data.batching import Example
from attnkit.data.copy_ids import encode_extended, source_oovs
from attnkit.data.tokenizers import Tokenizer
from attnkit.data.vocab import EOS, EOS_ID, Vocab
from attnkit.errors import AttnkitError, InputError

#: an input longer than (data.max_src_len) x this many characters is cut to that length before it
#: is tokenized (a 1 GB line costs no tokenizing time); no real token is this long
CHARS_PER_TOKEN = 100


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


@dataclass
class Prepared:
    """Inputs checked and tokenized once (:meth:`SourceReader.prepare`), ready to decode: the
    texts, an example per non-blank one (``index``: its position in ``texts``), and the source
    tokens each encodes by position ("</s>" included; blank inputs have none)."""

    texts: list[str]
    examples: list[Example]
    tokens: dict[int, list[str]]

    def __len__(self) -> int:
        return len(self.texts)

    def __add__(self, other: Prepared) -> Prepared:
        """Both, one after the other (the server decodes several requests as one batch)."""
        shift = len(self.texts)
        moved = [Example(e.src, e.tgt, e.index + shift) for e in other.examples]
        tokens = {**self.tokens, **{i + shift: t for i, t in other.tokens.items()}}
        return Prepared(self.texts + other.texts, self.examples + moved, tokens)


@dataclass(frozen=True)
class SourceReader:
    """How a seq2seq model reads its source text: its ``tokenizer`` and ``vocab``, at most
    ``max_len`` tokens ("</s>" included: ``data.max_src_len``), what an input longer than that
    gets (``overlong``, ``data.overlong``: "truncate", with a warning, or "error"), and whether
    the model copies source words (``copies``: words the vocabulary lacks keep extended ids,
    :mod:`attnkit.data.copy_ids`)."""

    tokenizer: Tokenizer
    vocab: Vocab
    max_len: int
    overlong: str
    copies: bool = False

    def encode(
        self,
        texts: Sequence[str],
        warn_unknown: bool = True,
        names: Sequence[str] | None = None,
        warn: bool = True,
    ) -> tuple[list[Example], list[list[str]]]:
        """Raw source texts -> examples and the tokens each encodes ("</s>" included).

        Empty inputs are errors (:meth:`prepare` passes blank lines through before this);
        over-long ones are truncated with a warning, or refused when ``overlong`` is "error";
        tokens never seen in training become ``<unk>``, with one warning per input naming them
        (unless ``warn_unknown`` is False: scoring a split says nothing per line; ``warn`` False:
        no warning at all). Messages call input i ``names[i]`` (default ``input i+1``); examples
        are indexed by position in ``texts``. Errors are :class:`InputError` naming the input.
        """
        cap = self.max_len - 1
        chars = (cap + 1) * CHARS_PER_TOKEN  # more can only be cut: not tokenized at all
        examples, token_lists, n_long = [], [], 0
        for i, text in enumerate(texts):
            name = names[i] if names is not None else f"input {i + 1}"
            if len(text) > chars:
                if self.overlong == "error":
                    raise InputError(
                        f"{name} has {len(text):,} characters, more than data.max_src_len - 1 = "
                        f"{cap} tokens can hold",
                        name,
                    )
                text = text[:chars]
            tokens = self.tokenizer.tokenize(text)
            if not text.strip() or not tokens:
                raise InputError(f"{name} is empty: nothing to translate", name)
            if len(tokens) > cap:
                if self.overlong == "error":
                    raise InputError(
                        f"{name} has {len(tokens)} tokens, more than data.max_src_len - 1 = {cap}",
                        name,
                    )
                n_long += 1
                tokens = tokens[:cap]
            if warn_unknown and warn:
                unknown_words(name, tokens, self.vocab, self.copies)
            oovs = source_oovs(tokens, self.vocab) if self.copies else []  # copied by id
            examples.append(Example(encode_extended(tokens, self.vocab, oovs) + [EOS_ID], [], i))
            token_lists.append(list(tokens) + [EOS])
        if n_long and warn:
            warnings.warn(
                f"{n_long} input(s) longer than {cap} tokens were truncated (data.max_src_len)",
                stacklevel=3,
            )
        return examples, token_lists

    def prepare(
        self,
        texts: Sequence[str | bytes],
        warn_unknown: bool = True,
        names: Sequence[str] | None = None,
        allow_blank: bool = True,
        warn: bool = True,
    ) -> Prepared:
        """``texts`` checked and tokenized, ready to decode. Text that is not UTF-8 becomes
        U+FFFD. A blank input gives a blank output, with a warning, or with ``allow_blank`` False
        an :class:`InputError`; ``names`` and ``warn`` as :meth:`encode` takes them."""
        texts = as_utf8(texts, "input")
        if not texts:
            raise AttnkitError("no input to translate")
        names = list(names) if names is not None else [f"input {i + 1}" for i in range(len(texts))]
        blank = [i for i, text in enumerate(texts) if not text.strip()]
        if blank and not allow_blank:
            raise InputError(f"{names[blank[0]]}: blank: nothing to translate", names[blank[0]])
        if blank and warn:  # a blank line gives a blank line: files stay line-aligned
            shown = ", ".join(str(i + 1) for i in blank[:10]) + (", ..." if len(blank) > 10 else "")
            warnings.warn(
                f"{len(blank)} blank input(s) (line {shown}) give blank outputs", stacklevel=4
            )
        filled = [i for i, text in enumerate(texts) if text.strip()]
        examples, token_lists = self.encode(
            [texts[i] for i in filled], warn_unknown, [names[i] for i in filled], warn
        )
        for example in examples:  # back to the caller's positions
            example.index = filled[example.index]
        return Prepared(texts, examples, dict(zip(filled, token_lists)))
