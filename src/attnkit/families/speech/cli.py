"""The speech family's command-line hooks: ``attnkit evaluate`` and ``attnkit plot``."""

from __future__ import annotations

from pathlib import Path

from attnkit.data.tasks import speech
from attnkit.errors import AttnkitError
from attnkit.families.speech.model import SpeechModel, spoken


def evaluate(args):
    """Greedy spellings only (``--beam`` is not read: a speech model has no beam search yet)."""
    if args.alpha is not None:
        raise AttnkitError(f"--alpha {args.alpha}: a speech model spells greedily")
    model = SpeechModel.load(args.model[0], args.device)
    return model.evaluate(args.split, args.out, data_dir=args.data_dir)


def plot(args) -> None:
    """TEXT is a WAV file, or ``LANG: NUMBER`` (``de: 97``) spoken by a held-out voice."""
    if args.image is not None or args.explain or args.grid:
        raise AttnkitError("--image/--explain/--grid are for vision and seq2seq models")
    if not args.text:
        raise AttnkitError('give a WAV file or a number to speak as TEXT, e.g. "de: 97"')
    output = Path(args.output)
    if output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {output}: use a .png, .svg or .pdf file name")
    model = SpeechModel.load(args.model, args.device)
    heard = model.transcribe(_audio(args.text))
    heard.plot(str(output)).clear()
    print(f"heard: {heard.digits}\npicture: {output}")


def _audio(text: str):
    """A WAV path as it is; ``"de: 97"`` as the item the first held-out voice speaks."""
    lang, sep, number = text.partition(":")
    lang, number = lang.strip(), number.strip()
    if not sep or lang not in speech.LANGUAGES:
        return Path(text)
    if not number.isdigit() or len(number) > 6:
        raise AttnkitError(f"{text!r}: give LANG: NUMBER with a number of at most 6 digits")
    return spoken(lang, number)
