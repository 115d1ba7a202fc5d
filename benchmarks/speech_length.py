#!/usr/bin/env python3
"""The length curve on spoken numbers: exact match, CER and attention AER against the number of
digits, up to numbers longer than any heard in training, for the checkpoints
benchmarks/speech.py trained.

    python benchmarks/speech_length.py --runs runs/bench_speech \
        --out docs/results/speech_length_cpu.json --plot docs/images/speech_length.png

For each digit count 1..--max-digits and each language of the checkpoints' data, --per numbers
of exactly that many digits are drawn (seed --seed) and spoken by the test split's held-out
voice variants, with rates, pitches and noise drawn from the config's ranges; each model spells
them greedily (LAS stops at 12 outputs). LAS's teacher-forced attention is scored against the
gold word timings (AER with every gold link possible, as benchmarks/speech.py scores it).

The training numbers have at most as many digits as the config's ``data.max_number``: longer
ones test whether attention keeps its place (Chorowski et al. 2015 report location-aware
attention holding on utterances longer than those seen in training, where content attention
fails: on TIMIT, other data). That is a test of length only if the longer numbers say words
training heard: each row counts the utterances holding a spoken word no training utterance
holds (``unheard``; train up to 9999 and the words of 5-6 digit numbers are all heard, train
up to 999 and ``thousand`` is not). Numbers drawn here may fall into the training split when
they are short enough: the curve measures length, not novelty.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import one_line  # noqa: E402


def items_of(cfg, digits: int, per: int, seed: int):
    """``per`` numbers of ``digits`` digits in each language of ``cfg`` (SpeechData), spoken by
    held-out voices."""
    from num2words import num2words

    from attnkit.data.tasks import speech

    rng = np.random.default_rng([seed, digits])
    items = []
    for lang in cfg.languages:
        for _ in range(per):
            n = int(rng.integers(10 ** (digits - 1) if digits > 1 else 0, 10**digits))
            voice = speech.Voice(
                lang,
                str(rng.choice(speech.VARIANTS["test"])),
                int(rng.integers(cfg.rates[0], cfg.rates[1] + 1)),
                int(rng.integers(cfg.pitches[0], cfg.pitches[1] + 1)),
                round(float(rng.uniform(*cfg.noise)), 4),
                int(rng.integers(2**31)),
            )
            items.append(speech.Item(num2words(n, lang=lang), str(n), voice))
    return items


def words_of(item) -> set[tuple[str, str]]:
    """The spoken words of ``item``, each with its language: ``("de", "tausend")``."""
    from attnkit.data.tasks import speech

    lang = item.voice.language
    return {(lang, item.text[a:b]) for a, b in speech.segments_of(item.text, lang)}


def training_words(cfg) -> set[tuple[str, str]]:
    """Every spoken word of the training split of ``cfg`` (SpeechData)."""
    from attnkit.data.tasks import speech

    most = None if cfg.max_items is None else tuple(cfg.max_items)
    items = speech.generate(cfg.seed, tuple(cfg.languages), cfg.max_number, cfg.ranges(), most)
    return set().union(*(words_of(item) for item in items["train"]))


def heard(cfg, items):
    """The items as a SpeechSet (features and targets)."""
    from attnkit.data.features import log_mel
    from attnkit.data.tasks import speech
    from attnkit.data.tasks.speech_set import SpeechSet, encode

    features = [
        log_mel(torch.from_numpy(speech.speak(item, cfg.directory).samples), cfg.mel)
        for item in items
    ]
    return SpeechSet(items, features, [encode(item.digits) for item in items])


def row_of(digits: int, data, models: dict, cfg, known: set) -> dict:
    """One length bucket: per model exact match, CER, WER, how many digits it spelled (count of
    utterances per spelling length) and AER where it attends."""
    from attnkit.families.speech.evaluate import attention_alignment, score, transcribe

    unheard = sum(1 for item in data.items if not words_of(item) <= known)
    seconds = [len(f) * cfg.mel.hop / cfg.mel.sample_rate for f in data.features]
    row = {"digits": digits, "items": len(data), "unheard": unheard}
    row["seconds"] = round(float(np.mean(seconds)), 2)
    row["in_training"] = digits <= len(str(cfg.max_number))
    for name, model in models.items():
        scores = score(model.net, data)
        row[name] = {k: scores[k] for k in ("exact_match", "cer", "wer")}
        spelled = Counter(len(found) for found in transcribe(model.net, data))
        row[name]["spelled_digits"] = {str(n): spelled[n] for n in sorted(spelled)}
        if model.config.model.kind != "ctc":
            found = attention_alignment(model.net, data, cfg.mel.hop, cfg.directory)
            row[name]["aer"] = found["aer"]
    return row


def plot(curve: list[dict], names: list[str], trained: int, path: Path) -> None:
    """Exact match and CER against digits, one line per model, the training range shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    x = [row["digits"] for row in curve]
    for ax, key, label in zip(axes, ("exact_match", "cer"), ("test exact match %", "test CER %")):
        ax.axvspan(0.5, trained + 0.5, color="0.9", label="lengths trained on")
        for name in names:
            ax.plot(x, [row[name][key] for row in curve], marker="o", label=name)
        ax.set_xlabel("digits of the spoken number")
        ax.set_ylabel(label)
        ax.set_xticks(x)
    axes[0].legend(fontsize=8)
    fig.suptitle("spoken numbers, held-out voices", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    import attnkit

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/bench_speech"))
    parser.add_argument("--models", nargs="+", default=["las_content", "las_location", "ctc"])
    parser.add_argument("--max-digits", type=int, default=6)
    parser.add_argument("--per", type=int, default=25, help="numbers per length and language")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here")
    parser.add_argument("--plot", type=Path, default=None, help="draw the curve here (PNG)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    models = {name: attnkit.load(args.runs / name / "best", device="cpu") for name in args.models}
    cfg = next(iter(models.values())).config.data
    known = training_words(cfg)
    curve = []
    for digits in range(1, args.max_digits + 1):
        data = heard(cfg, items_of(cfg, digits, args.per, args.seed))
        row = row_of(digits, data, models, cfg, known)
        print(json.dumps(row), flush=True)
        curve.append(row)
    trained = len(str(cfg.max_number))
    if args.plot is not None:
        plot(curve, args.models, trained, args.plot)
    if args.out is not None:
        doc = {
            "machine": one_line(),
            "command": " ".join(["python", "benchmarks/speech_length.py", *sys.argv[1:]]),
            "loadavg": Path("/proc/loadavg").read_text().split()[:3],
            "trained_max_number": cfg.max_number,
            "trained_max_items": cfg.max_items,
            "curve": curve,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
