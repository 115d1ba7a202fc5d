"""Scoring a speech model: greedy spellings of a split, exact match, character error rate and
word error rate, overall and per language; and its attention against the gold word timings.

**WER** is over the *spoken words*: the spelled number is written out in the utterance's
language (``num2words``) and cut into the words eSpeak speaks (German compounds at
``hundert``/``tausend``/``und``: :func:`attnkit.data.tasks.speech.segments_of`), then
compared with the words heard. So 97 heard as 96 in German is one word wrong of three
(``sechs und neunzig``), and a spelling that is no number at all (empty) misses every word.
**CER** is over the digits.
"""

from __future__ import annotations

import torch
from num2words import num2words

from attnkit.data.tasks import speech
from attnkit.data.tasks.alignment import Alignment
from attnkit.data.tasks.speech_set import SpeechSet, decode
from attnkit.evaluation.alignment import SYNTHETIC_RULE, alignment_metrics
from attnkit.evaluation.metrics import char_error_rate, word_error_rate
from attnkit.models.ctc import CTC
from attnkit.models.las import LAS
from attnkit.models.speech_transformer import SpeechTransformer

Speller = LAS | CTC | SpeechTransformer  # what the speech family trains

MAX_DIGITS = 12  # spellings are cut here (a number of the task has at most 7 digits)


@torch.no_grad()
def spell(model: Speller, features, lengths) -> list[str]:
    """Greedy spellings of a batch: features (B, T, F), lengths (B,) -> B digit strings."""
    device = next(model.parameters()).device
    if isinstance(model, CTC):
        labels, _ = model.greedy(features.to(device), lengths)
        return [decode(row) for row in labels]
    outputs, _ = model.greedy(features.to(device), lengths, MAX_DIGITS)
    return [decode(row) for row in outputs.tolist()]


def transcribe(model: Speller, data: SpeechSet, batch_size: int = 100) -> list[str]:
    """Greedy spellings of every item of ``data``, in order."""
    model.eval()
    found: list[str] = []
    for start in range(0, len(data), batch_size):
        features, lengths, _ = data.batch(range(start, min(start + batch_size, len(data))))
        found.extend(spell(model, features, lengths))
    return found


def spoken_words(digits: str, language: str) -> str:
    """``"97", "de"`` -> ``"sieben und neunzig"``: the words a number is spoken as (empty for
    a spelling that is no number)."""
    if not digits.isdigit():
        return ""
    text = num2words(int(digits), lang=language)
    return " ".join(text[a:b] for a, b in speech.segments_of(text, language))


def score(model: Speller, data: SpeechSet, batch_size: int = 100) -> dict:
    """Exact match, CER and WER of the greedy spellings, overall and per language."""
    found = transcribe(model, data, batch_size)
    scores = _figures(found, data.items)
    for lang in sorted({item.voice.language for item in data.items}):
        mine = [i for i, item in enumerate(data.items) if item.voice.language == lang]
        scores[lang] = _figures([found[i] for i in mine], [data.items[i] for i in mine])
    scores.update(metric="exact_match", higher_is_better=True, items=len(data.items))
    return scores


def _figures(found: list[str], items: list[speech.Item]) -> dict:
    refs = [item.digits for item in items]
    exact = sum(f == r for f, r in zip(found, refs)) / max(len(refs), 1)
    heard = [spoken_words(f, item.voice.language) for f, item in zip(found, items)]
    said = [spoken_words(item.digits, item.voice.language) for item in items]
    return {
        "exact_match": round(100 * exact, 2),
        "cer": round(char_error_rate(found, refs), 2),
        "wer": round(word_error_rate(heard, said), 2),
    }


@torch.no_grad()
def dev_scorer(model: Speller, data: SpeechSet, batch_size: int) -> dict:
    """The dev scores the training loop decides by."""
    return score(model, data, batch_size)


def listener_gold(utterance: speech.Utterance, hop: int, stride: int) -> Alignment:
    """The gold links of :func:`attnkit.data.tasks.speech.gold_frames` at the listener's
    resolution (``stride`` feature frames per listener frame), every link possible: one
    attended frame per digit is then scored by whether it falls inside the digit's words, and
    AER is ``100 - argmax in span``."""
    links = {(j, t // stride) for j, t in speech.gold_frames(utterance, hop).possible}
    return Alignment(frozenset(), frozenset(links))


@torch.no_grad()
def attention_alignment(
    model: LAS | SpeechTransformer, data: SpeechSet, hop: int, cache=None, batch_size: int = 50
) -> dict:
    """The attention of teacher-forced spellings of ``data`` (features of hop ``hop``; audio
    cache ``cache``) against the gold word timings (:mod:`attnkit.evaluation.alignment`, digits
    with gold links only: ``</s>`` and a 0 no word names are not scored)."""
    model.eval()
    stride = model.listener.stride
    pairs = []
    for start in range(0, len(data), batch_size):
        rows = list(range(start, min(start + batch_size, len(data))))
        features, lengths, targets = data.batch(rows)
        _, weights = model(features, lengths, targets)  # (B, U, S)
        frames = torch.clamp(lengths // stride, min=1)
        for row, i in enumerate(rows):
            digits = len(data.targets[i]) - 1  # the </s> row left out
            utterance = speech.speak(data.items[i], cache)
            gold = listener_gold(utterance, hop, stride)
            pairs.append((weights[row, :digits, : int(frames[row])].numpy(), gold))
    return alignment_metrics(pairs, rule=SYNTHETIC_RULE)
