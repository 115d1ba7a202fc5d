"""Sequence metrics: exact match, G2P word/phone error rates, WER/CER, BLEU and chrF.

All inputs are detokenized strings (hypotheses and references as text). Rates
reported by :func:`sequence_metrics` and :func:`g2p_scores` are percentages
rounded to 4 decimals; BLEU and chrF are sacrebleu's corpus scores (0-100),
unrounded so that they equal what sacrebleu prints. :func:`word_error_rate` and
:func:`char_error_rate` are corpus-level edit-distance rates, in percent, unrounded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import sacrebleu

from attnkit.errors import ConfigError

try:  # optional: a C++ Levenshtein (installed alongside jiwer); the DP below is the fallback
    from rapidfuzz.distance import Levenshtein as _rf_levenshtein
except ImportError:  # pragma: no cover - depends on the environment
    _rf_levenshtein = None

_DIGITS = 4


def _check_lengths(hyps: Sequence, refs: Sequence) -> None:
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    if not hyps:
        raise ValueError("no hypotheses to score")


def exact_match(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Fraction in [0, 1] of hypotheses equal to their reference (after stripping surrounding
    whitespace)."""
    _check_lengths(hyps, refs)
    return sum(h.strip() == r.strip() for h, r in zip(hyps, refs)) / len(hyps)


def _levenshtein_dp(a: Sequence, b: Sequence) -> int:
    """Insertions, deletions and substitutions, one row at a time: O(len(a) * len(b))."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance between two token sequences (lists of phones, words, characters)."""
    if _rf_levenshtein is not None:
        return int(_rf_levenshtein.distance(list(a), list(b)))
    return _levenshtein_dp(a, b)


def _as_lists(
    hyps: Mapping[str, str] | Sequence[str],
    refs: Mapping[str, Sequence[str]] | Sequence[Sequence[str]],
) -> tuple[list[str], list[list[str]]]:
    """Align hypotheses and reference lists, by word for dicts or by position for lists."""
    if isinstance(refs, Mapping):
        if not isinstance(hyps, Mapping):
            raise TypeError(
                "g2p_scores: references are a dict (word -> pronunciations), so hypotheses must be "
                "one too"
            )
        missing = [w for w in refs if w not in hyps]
        extra = [w for w in hyps if w not in refs]
        if missing or extra:
            raise ValueError(
                f"g2p_scores: {len(missing)} words without a hypothesis (e.g. {missing[:3]}) and "
                f"{len(extra)} hypotheses for words without references (e.g. {extra[:3]})"
            )
        words = list(refs)
        hyp_list, ref_lists = [hyps[w] for w in words], [refs[w] for w in words]
    else:
        hyp_list, ref_lists = list(hyps), list(refs)
    ref_lists = [[r] if isinstance(r, str) else list(r) for r in ref_lists]
    _check_lengths(hyp_list, ref_lists)
    if any(not r for r in ref_lists):
        raise ValueError("g2p_scores: a word has no reference pronunciation")
    return hyp_list, ref_lists


def g2p_scores(
    hyps: Mapping[str, str] | Sequence[str],
    refs: Mapping[str, Sequence[str]] | Sequence[Sequence[str]],
) -> dict:
    """Word and phone error rates over WORDS, each scored against all of its pronunciations.

    ``hyps``: word -> predicted phones (``"K AH Z"``), or a list aligned with
    ``refs``; ``refs``: word -> list of reference pronunciations, or a list of
    such lists. Phones are whitespace-separated tokens.

    - WER: percentage of words whose hypothesis equals none of the references.
    - PER: sum over words of the edit distance to the closest reference,
      divided by the summed lengths of those closest references, in percent
      (on a tie in distance the longer reference counts).

    Returns ``{"wer": %, "per": %, "words": n}``.
    """
    hyp_list, ref_lists = _as_lists(hyps, refs)
    wrong = errors = length = 0
    for hyp, prons in zip(hyp_list, ref_lists):
        hyp_tokens = hyp.split()
        ref_tokens = [p.split() for p in prons]
        best_dist, best_len = min((edit_distance(hyp_tokens, r), -len(r)) for r in ref_tokens)
        wrong += best_dist != 0
        errors += best_dist
        length += -best_len
    n = len(hyp_list)
    return {
        "wer": round(100.0 * wrong / n, _DIGITS),
        "per": round(100.0 * errors / max(length, 1), _DIGITS),
        "words": n,
    }


def word_error_rate(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Corpus WER in percent: word edits (insertions, deletions, substitutions) summed over
    lines, divided by the reference words summed over lines; words are whitespace-separated.
    Lower is better; above 100 when the outputs are much longer than the references."""
    return _error_rate([h.split() for h in hyps], [r.split() for r in refs])


def char_error_rate(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Corpus CER in percent: as :func:`word_error_rate` over characters (spaces included,
    surrounding whitespace stripped)."""
    return _error_rate([h.strip() for h in hyps], [r.strip() for r in refs])


def _error_rate(hyps: Sequence[Sequence], refs: Sequence[Sequence]) -> float:
    _check_lengths(hyps, refs)
    edits = sum(edit_distance(h, r) for h, r in zip(hyps, refs))
    return 100.0 * edits / max(1, sum(len(r) for r in refs))


def bleu(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Corpus BLEU (0-100) of detokenized hypotheses against one raw reference each, sacrebleu
    defaults."""
    _check_lengths(hyps, refs)
    return float(sacrebleu.corpus_bleu(list(hyps), [list(refs)]).score)


def chrf(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Corpus chrF (0-100) with sacrebleu defaults."""
    _check_lengths(hyps, refs)
    return float(sacrebleu.corpus_chrf(list(hyps), [list(refs)]).score)


def _exact(hyps, refs) -> dict:
    return {"exact_match": round(100.0 * exact_match(hyps, refs), _DIGITS)}


def _translation(hyps, refs) -> dict:
    return {"bleu": bleu(hyps, refs), "chrf": chrf(hyps, refs)}


def text_scores(hyps: Sequence[str], refs: Sequence[str]) -> dict:
    """Every line against its one reference: BLEU, chrF, WER, CER and exact match (percent)."""
    return {
        **_translation(hyps, refs),
        "wer": word_error_rate(hyps, refs),
        "cer": char_error_rate(hyps, refs),
        **_exact(hyps, refs),
    }


METRICS: dict[str, Callable[..., dict]] = {
    "exact": _exact,
    "g2p": g2p_scores,
    "bleu": _translation,
    "text": text_scores,
}


def sequence_metrics(task: str, hyps, refs) -> dict:
    """Scores for a task's metric family: ``"exact"`` -> ``{"exact_match": %}``,
    ``"g2p"`` -> :func:`g2p_scores`, ``"bleu"`` -> ``{"bleu": ..., "chrf": ...}``,
    ``"text"`` -> :func:`text_scores`."""
    try:
        metric = METRICS[task]
    except KeyError:
        raise ConfigError(
            f"unknown metric family {task!r} (expected one of {sorted(METRICS)})"
        ) from None
    return metric(hyps, refs)
