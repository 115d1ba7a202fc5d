"""``attnkit demo``: train a number translator on generated data and show its attention.

No download: the task is generated with num2words (number words in English,
German, French and Spanish -> digits). German compounds such as
"siebenundneunzig" (seven-and-ninety) -> "97" make the alignment
non-monotonic, which the heatmaps show.

With ``--attention none`` the model has no attention (the classic encoder-decoder): the demo
says so, and its heatmaps, records (``saliency.json``) and report show gradient saliency.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from attnkit.attention.modules import NO_ATTENTION
from attnkit.evaluation.evaluate import evaluate_translator
from attnkit.evaluation.examples import choose, judge, judged_record, tally
from attnkit.experiment import ExperimentConfig, experiment_from_dict
from attnkit.explain.no_attention import NOTE, TITLE, pictured
from attnkit.training.trainer import Trainer
from attnkit.translator import Translator
from attnkit.viz import save_heatmap, save_records, write_report

#: shown in every demo: compounds whose digits come out in the opposite order of their words
SHOWCASE = [
    "siebenundneunzig",
    "dreihundertvierundzwanzig",
    "quatre-vingt-dix-sept",
    "ninety-seven",
    "setecientos cuarenta y dos",
]


def demo_config(
    out_dir: Path, quick: bool, attention: str, minutes: float | None
) -> ExperimentConfig:
    overrides = [f"model.attention={attention}"]
    if quick:
        # a smoke test: smaller numbers and model, a few epochs
        overrides += [
            "data.max_number=199",
            "model.encoder_hidden=64",
            "model.decoder_hidden=128",
            "train.epochs=4",
        ]
        if attention != NO_ATTENTION:  # a model without attention has no attention space
            overrides.append("model.attention_dim=64")
    if minutes is not None:
        overrides.append(f"train.max_minutes={minutes}")
    base = {
        "name": "demo",
        "output_dir": str(out_dir / "model"),
        "data": {"task": "numbers", "direction": "words2digits", "max_number": 999},
        "model": {
            "embedding_dim": 64,
            "encoder_hidden": 128,
            "decoder_hidden": 256,
            "attention_dim": 128,
            "dropout": 0.1,
        },
        "train": {"epochs": 60, "batch_size": 32, "lr": 0.001, "patience": 4, "max_minutes": 2.25},
    }
    return experiment_from_dict(base, overrides, source="demo")


def default_out(attention: str) -> Path:
    """Where ``attnkit demo --attention ATTENTION`` writes unless told: runs/demo for the default
    (bahdanau), runs/demo-ATTENTION for any other, so that two demos sit side by side."""
    return Path("runs/demo") if attention == "bahdanau" else Path(f"runs/demo-{attention}")


def run_demo(
    out_dir: str | Path = "runs/demo",
    quick: bool = False,
    attention: str = "bahdanau",
    minutes: float | None = None,
    progress: bool = True,
) -> dict:
    out = Path(out_dir)
    cfg = demo_config(out, quick, attention, minutes)
    cfg.train.progress = progress
    attends = attention != NO_ATTENTION
    what = f"{attention} attention" if attends else "no attention (model.attention: none)"
    print(
        f"attnkit demo: number words (en, de, fr, es) -> digits, {what}, CPU/GPU auto; output in "
        f"{out}/",
        flush=True,
    )
    t0 = time.time()
    trainer = Trainer(cfg, dev_scorer=evaluate_translator)
    best = trainer.train(overwrite=True)  # a demo run replaces the previous demo's model
    train_s = time.time() - t0
    translator = Translator.load(best)
    metrics, sources, refs, hyps = evaluate_translator(
        translator, "exact", trainer.splits.test, progress=progress
    )
    print(
        f"\ntest exact match: {metrics['exact_match']:.2f}% of {metrics['items']} held-out numbers "
        f"(trained {train_s / 60:.1f} min)"
    )

    shown = translator.translate(SHOWCASE)
    print("\nsome translations:")
    for t in shown:
        print(f"  {t.source:32s} -> {t.output}")
    # a model without attention is drawn by its gradient saliency, titled to say so
    title = None if attends else TITLE
    label = "attention weight" if attends else "saliency"
    right = judge([t.output for t in hyps], refs)
    chosen = choose(right)  # every error first (the report lists them first), then right ones
    examples = pictured(translator, shown + [hyps[i] for i in chosen])
    heat_dir = out / "heatmaps"
    paths = []
    for i, t in enumerate(examples[: len(shown)]):
        path = heat_dir / f"{i:02d}_{_slug(t.source)}.png"
        paths.append(save_heatmap(t.record(), path, title=title, value_label=label))
    records = [t.record() for t in examples[: len(shown)]]
    tested = zip(examples[len(shown) :], chosen)
    records += [judged_record(t, refs[i], i, chrf=False) for t, i in tested]
    data_file = out / ("attention.json" if attends else "saliency.json")
    save_records(records, data_file)
    summary = {
        "task": "numbers",
        "attention": attention,
        "test": metrics,
        "train_minutes": round(train_s / 60, 2),
        "updates": json.loads((best / "trainer.json").read_text())["state"]["step"],
    }
    report = write_report(
        out / "report.html",
        f"attnkit demo: numbers, {what}",
        summary,
        records,
        config=_config_dict(best),
        notes=None if attends else NOTE,
        map_title=title,
        tally=tally(right),
    )
    (out / "metrics.json").write_text(json.dumps(summary, indent=1))
    if not attends:
        print("\nthe model has no attention: the pictures show gradient saliency instead")
    print(
        f"\nheatmaps: {heat_dir}/ ({len(paths)} PNG)\n{'attention' if attends else 'saliency'} "
        f"data: {data_file}\nreport: {report}"
    )
    return summary


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)[:40]


def _config_dict(checkpoint: Path) -> dict:
    from attnkit.checkpoint import read_config

    return read_config(checkpoint)
