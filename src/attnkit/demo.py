"""``attnkit demo``: train a number translator on generated data and show its attention.

No download: the task is generated with num2words (number words in English,
German, French and Spanish -> digits). German compounds such as
"siebenundneunzig" (seven-and-ninety) -> "97" make the alignment
non-monotonic, which the heatmaps show.

With ``--attention none`` the model has no attention (the classic encoder-decoder): the demo
says so, and its heatmaps, records (``saliency.json``) and report show gradient saliency.

The demo trains to a data budget (at most 60 epochs, stopping early after 4 evaluations without
a better dev score), so it reaches the same accuracy on a slow or busy machine as on a fast one,
only later. A wall clock (:data:`SAFETY_MINUTES`, or ``--minutes``) is only a safety cap: when it
ends training, one line says so, with the dev score reached and how to go on (``--resume``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from attnkit.attention.modules import NO_ATTENTION
from attnkit.config import applicable
from attnkit.errors import AttnkitError
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
#: the wall-clock cap of a demo's training, in minutes: a safety net, not the budget (an idle
#: 2-core CPU finishes the recipe in about a minute)
SAFETY_MINUTES = 15.0
EPOCHS = 60  # the data budget (early stopping ends the run well before)


def demo_config(
    out_dir: Path, quick: bool, attention: str, minutes: float | None, threads: int | None = None
) -> ExperimentConfig:
    """The demo's experiment: ``minutes`` is the safety cap (None: :data:`SAFETY_MINUTES`)."""
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
    overrides.append(f"train.max_minutes={SAFETY_MINUTES if minutes is None else minutes}")
    if threads is not None:
        overrides.append(f"train.threads={threads}")
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
        "train": {"epochs": EPOCHS, "batch_size": 32, "lr": 0.001, "patience": 4},
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
    threads: int | None = None,
    resume: bool = False,
) -> dict:
    """Train the demo into ``out_dir`` (``resume``: go on from its ``model/last`` for another
    ``minutes`` at most), score it, print a few translations and write its pictures and report;
    returns the summary written to ``metrics.json``."""
    out = Path(out_dir)
    attends = attention != NO_ATTENTION
    what = f"{attention} attention" if attends else "no attention (model.attention: none)"
    print(
        f"attnkit demo: number words (en, de, fr, es) -> digits, {what}, CPU/GPU auto; output in "
        f"{out}/",
        flush=True,
    )
    cfg = demo_config(out, quick, attention, minutes, threads)
    cfg.train.progress = progress
    t0 = time.time()
    trainer, best, state, capped = _train(cfg, resume, _rerun(out, attention, quick))
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
        "updates": state["step"],
        "stopped_by_safety_cap": capped,
    }
    report = write_report(
        out / "report.html",
        f"attnkit demo: numbers, {what}",
        summary,
        records,
        config=applicable(translator.config),
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


def _train(cfg: ExperimentConfig, resume: bool, rerun: str):
    """Train the demo (``resume``: on from ``last``, for ``max_minutes`` more at most); the
    trainer, the best checkpoint, ``last``'s state and whether the safety cap ended training
    (then one line says so)."""
    last = Path(cfg.output_dir) / "last"
    cap = cfg.train.max_minutes
    if resume:  # the cap is a run's total clock: this call's minutes come on top of the time spent
        cfg.train.max_minutes = round(cap + _state(last, "--resume")["elapsed_s"] / 60, 3)
    trainer = Trainer(cfg, dev_scorer=evaluate_translator)
    # a fresh demo replaces the previous demo's model in the same directory
    best = trainer.train(resume=resume, overwrite=not resume)
    state = _state(last, "")
    capped = _stopped_by_clock(state, cfg)
    if capped:
        print(_capped_line(cfg, cap, state, rerun), flush=True)
    return trainer, best, state, capped


def _state(last: Path, option: str) -> dict:
    """The trainer state a run's ``last`` checkpoint holds (``option``: what asked for it)."""
    path = last / "trainer.json"
    if not path.is_file():
        raise AttnkitError(f"{last}: no demo run to {option or 'read'} here (no trainer.json)")
    return json.loads(path.read_text())["state"]


def _stopped_by_clock(state: dict, cfg: ExperimentConfig) -> bool:
    """True when a finished run's clock ended it: neither its epochs nor its patience did."""
    patience = cfg.train.patience
    by_patience = patience is not None and state["bad_evals"] >= patience
    return not by_patience and state["epoch"] < cfg.train.epochs


def _rerun(out: Path, attention: str, quick: bool) -> str:
    """The command that runs this demo again (``--resume`` to be added)."""
    words = ["attnkit demo"]
    if attention != "bahdanau":
        words.append(f"--attention {attention}")
    if out != default_out(attention):
        words.append(f"--out {out}")
    if quick:
        words.append("--quick")
    return " ".join(words)


def _capped_line(cfg: ExperimentConfig, cap: float, state: dict, rerun: str) -> str:
    """The one line of a demo whose safety cap ended training before its data budget."""
    best = state.get("best")
    score = "no dev score yet" if best is None else f"best dev exact match {best:.2f}%"
    return (
        f"\nstopped by the {cap:g}-minute safety cap after {state['step']} updates "
        f"(epoch {state['epoch'] + 1} of {cfg.train.epochs}, early stopping not reached): {score}; "
        f"this machine is slower or busier than the recipe expects. Go on with "
        f"`{rerun} --resume` (another {cap:g} minutes at most) or give more time "
        f"with `--minutes`."
    )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)[:40]
