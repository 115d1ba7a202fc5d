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

The demo uses the Python API as a notebook would: :func:`attnkit.train` on its experiment,
:func:`attnkit.load` on the best checkpoint, and the model's ``translate``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from attnkit.api import load, train
from attnkit.attention.modules import NO_ATTENTION
from attnkit.config import applicable
from attnkit.data.tasks.registry import build_splits
from attnkit.errors import AttnkitError
from attnkit.evaluation.examples import choose, group_references, judge, judged_record, tally
from attnkit.explain.no_attention import NOTE, TITLE, pictured
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
#: what ``--quick`` is, said when it starts and beside its score
QUICK = (
    "quick mode: a smoke test of the whole pipeline (a small model, a few epochs), not a trained "
    "translator: expect a low score; `attnkit demo` without --quick learns the task"
)


def busy_line(load: float, cores: int) -> str | None:
    """The line that says a machine is busy (its 1-minute ``load`` above its ``cores``), and what
    to do meanwhile; None on a machine with cores to spare."""
    if load <= cores:
        return None
    return (
        f"this machine is busy (load average {load:.1f} on {cores} cores): training will take "
        "longer than the usual minute; meanwhile `attnkit serve` shows the zoo's trained models"
    )


def _load_and_cores() -> tuple[float, int]:
    """The 1-minute load average and the cores this process may use (0.0 where the platform
    has no load average)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows
        load = 0.0
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return load, len(usable) if usable else (os.cpu_count() or 1)


def demo_config(
    out_dir: Path, quick: bool, attention: str, minutes: float | None, threads: int | None = None
) -> dict:
    """The demo's experiment, as the mapping :func:`attnkit.train` takes: ``minutes`` is the
    safety cap (None: :data:`SAFETY_MINUTES`)."""
    data = {"task": "numbers", "direction": "words2digits", "max_number": 999}
    model = {
        "attention": attention,
        "embedding_dim": 64,
        "encoder_hidden": 128,
        "decoder_hidden": 256,
        "attention_dim": 128,
        "dropout": 0.1,
    }
    training = {"epochs": EPOCHS, "batch_size": 32, "lr": 0.001, "patience": 4}
    if quick:  # a smoke test: smaller numbers and model, a few epochs
        data["max_number"] = 199
        model.update(encoder_hidden=64, decoder_hidden=128, attention_dim=64)
        training["epochs"] = 4
    if attention == NO_ATTENTION:  # a model without attention has no attention space
        del model["attention_dim"]
    training["max_minutes"] = SAFETY_MINUTES if minutes is None else minutes
    if threads is not None:
        training["threads"] = threads
    return {
        "name": "demo",
        "output_dir": str(out_dir / "model"),
        "data": data,
        "model": model,
        "train": training,
    }


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
    _opening(out, what, quick)
    cfg = demo_config(out, quick, attention, minutes, threads)
    cfg["train"]["progress"] = progress
    t0 = time.time()
    best, state, capped = _train(cfg, resume, _rerun(out, attention, quick))
    train_s = time.time() - t0
    model = load(best)
    refs, hyps, right = _test(model, progress)
    metrics = {"exact_match": round(100.0 * sum(right) / max(1, len(right)), 2), "items": len(hyps)}
    print(
        f"\ntest exact match: {metrics['exact_match']:.2f}% of {metrics['items']} held-out numbers "
        f"(trained {train_s / 60:.1f} min{'; quick mode: a smoke test' if quick else ''})"
    )

    shown = model.translate(SHOWCASE)
    print("\nsome translations:")
    for t in shown:
        print(f"  {t.source:32s} -> {t.output}")
    # a model without attention is drawn by its gradient saliency, titled to say so
    title = None if attends else TITLE
    label = "attention weight" if attends else "saliency"
    chosen = choose(right)  # every error first (the report lists them first), then right ones
    examples = pictured(model.translator, shown + [hyps[i] for i in chosen])
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
        "quick": quick,
    }
    notes = _notes(attends, quick, cfg["train"]["max_minutes"] if capped else None, out, attention)
    report = write_report(
        out / "report.html",
        f"attnkit demo: numbers, {what}",
        summary,
        records,
        config=applicable(model.config),
        notes=notes,
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


def _opening(out: Path, what: str, quick: bool) -> None:
    """The demo's first lines: what it does and where, a smoke test said as one, a busy machine
    said with what to do meanwhile."""
    print(
        f"attnkit demo: number words (en, de, fr, es) -> digits, {what}, CPU/GPU auto; output in "
        f"{out}/",
        flush=True,
    )
    if quick:
        print(QUICK, flush=True)
    busy = busy_line(*_load_and_cores())
    if busy:
        print(busy, flush=True)


def _notes(attends: bool, quick: bool, cap: float | None, out: Path, attention: str) -> str | None:
    """The report's notes: a model without attention, a run the safety ``cap`` ended (None: it
    did not), a smoke test."""
    notes = [] if attends else [NOTE]
    if cap is not None:
        notes.append(
            f"The safety cap ({cap:g} minutes) ended this run before its data budget: its score is "
            f"not the trained demo's (`{_rerun(out, attention, quick)} --resume` goes on)."
        )
    if quick:
        notes.append(QUICK[0].upper() + QUICK[1:] + ".")
    return " ".join(notes) or None


def _train(cfg: dict, resume: bool, rerun: str):
    """Train the demo (``resume``: on from ``last``, for ``max_minutes`` more at most) with
    :func:`attnkit.train`; the best checkpoint, ``last``'s state and whether the safety cap ended
    training (then one line says so)."""
    last = Path(cfg["output_dir"]) / "last"
    cap = cfg["train"]["max_minutes"]
    overrides = {}
    if resume:  # the cap is a run's total clock: this call's minutes come on top of the time spent
        total = round(cap + _state(last, "--resume")["elapsed_s"] / 60, 3)
        # a resumed run keeps its saved config but for the keys this call sets
        keys = ("max_minutes", "progress", "threads")
        cfg["train"]["max_minutes"] = total
        overrides = {f"train.{k}": cfg["train"][k] for k in keys if k in cfg["train"]}
    # a fresh demo replaces the previous demo's model in the same directory
    best = train(cfg, overrides, resume=resume, overwrite=not resume).best
    state = _state(last, "")
    capped = _stopped_by_clock(state, cfg["train"])
    if capped:
        print(_capped_line(cfg["train"], cap, state, rerun), flush=True)
    return best, state, capped


def _test(model, progress: bool) -> tuple[list[list[str]], list, list[bool]]:
    """The test split decoded greedily: each distinct number once, its references, its
    translation and whether that is right (any of its references: as ``attnkit evaluate``
    scores it)."""
    grouped = group_references(build_splits(model.config.data).test)
    refs = list(grouped.values())
    hyps = model.translate(list(grouped), progress=progress)
    return refs, hyps, judge([t.output for t in hyps], refs)


def _state(last: Path, option: str) -> dict:
    """The trainer state a run's ``last`` checkpoint holds (``option``: what asked for it)."""
    path = last / "trainer.json"
    if not path.is_file():
        raise AttnkitError(f"{last}: no demo run to {option or 'read'} here (no trainer.json)")
    return json.loads(path.read_text())["state"]


def _stopped_by_clock(state: dict, train_cfg: dict) -> bool:
    """True when a finished run's clock ended it: neither its epochs nor its patience did
    (``train_cfg``: the experiment's ``train:`` section)."""
    patience = train_cfg.get("patience")
    by_patience = patience is not None and state["bad_evals"] >= patience
    return not by_patience and state["epoch"] < train_cfg["epochs"]


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


def _capped_line(train_cfg: dict, cap: float, state: dict, rerun: str) -> str:
    """The one line of a demo whose safety cap ended training before its data budget."""
    best = state.get("best")
    score = "no dev score yet" if best is None else f"best dev exact match {best:.2f}%"
    return (
        f"\nstopped by the {cap:g}-minute safety cap after {state['step']} updates "
        f"(epoch {state['epoch'] + 1} of {train_cfg['epochs']}, early stopping not reached): "
        f"{score}; "
        f"this machine is slower or busier than the recipe expects. Go on with "
        f"`{rerun} --resume` (another {cap:g} minutes at most) or give more time "
        f"with `--minutes`."
    )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)[:40]
