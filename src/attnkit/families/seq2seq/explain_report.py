"""The seq2seq family's ``attnkit explain``: the attention a model pays beside its gradient
saliency, as pictures, data and scores.

For each explained input the model is forced along one output (its own greedy output, or the
reference with ``reference=True``) and two maps of that output are made: the attention it
pays while writing it, and the saliency of each output token (:mod:`attnkit.explain.saliency`).
Written to the output directory:

* ``NNN.png`` (or ``.svg``): the two maps side by side on shared axes;
* ``attention.json`` and ``saliency.json``: the maps as attention records (``attnkit plot``
  draws either);
* ``scores.json``: how often the two agree (argmax of each output row), and, where the task has
  gold alignments, both maps scored against them (AER, argmax in span, entropy, coverage);
* ``report.html``: every example, its map with a choice of attention or saliency (the records
  carry both), gold links outlined where the task has them.

``attnkit explain -o FILE`` explains one input and draws its two maps to FILE alone (the scores
are printed, nothing else is written).

A model without attention (``model.attention: none``) has saliency alone: each picture is its
saliency map titled "no attention: gradient saliency" (or the method's name), and no
``attention.json``, agreement or attention scores are written (``scores.json`` says
``"attention": "none"``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from attnkit.data.tasks.gold import gold_aligner
from attnkit.errors import AttnkitError
from attnkit.evaluation.agreement import argmax_agreement, rank_correlation
from attnkit.evaluation.alignment import SYNTHETIC_RULE, alignment_metrics, mark_gold
from attnkit.evaluation.inputs import split_pairs
from attnkit.explain.no_attention import TITLE, saliency_translations
from attnkit.explain.saliency import METHODS
from attnkit.families.seq2seq.translator import Translator
from attnkit.viz import plot_heatmap, plot_side_by_side, save_records, write_report
from attnkit.zoo import run_parent

MAX_EXAMPLES = 500


def explain_model(
    model_dir: Path,
    texts: Sequence[str] | None = None,
    split: str | None = None,
    count: int = 10,
    method: str = "gradient",
    reference: bool = False,
    out_dir: Path | None = None,
    image_format: str | None = None,
    device: str = "auto",
    pictures: int | None = None,
    picture: Path | None = None,
    translator: Translator | None = None,
    data_dir: Path | None = None,
) -> dict:
    """Explain ``texts`` (their own outputs), or the first ``count`` items of ``split`` (read
    from ``data_dir`` or the data directory, not the checkpoint's paths; their own outputs, or
    the references with ``reference``); the first ``pictures`` (None: 20) are drawn as
    ``image_format`` (None: png), all scored. Returns the scores written to ``out_dir/scores.json``.
    With ``picture``, one input is explained and its maps drawn to that file (.png or .svg);
    no directory is written (``out_dir``, ``image_format`` and ``pictures`` must be None).
    ``translator``: the checkpoint already loaded (the Python API's model)."""
    if method not in METHODS:
        raise AttnkitError(
            f"--method: unknown saliency method {method!r}; valid: {', '.join(METHODS)}"
        )
    if (texts is None) == (split is None):
        raise AttnkitError("give inputs to explain, or --split to explain the first items of one")
    if not 1 <= count <= MAX_EXAMPLES:
        raise AttnkitError(f"--count must be between 1 and {MAX_EXAMPLES}, got {count}")
    if reference and split is None:
        raise AttnkitError("--reference needs --split: typed inputs have no reference")
    if picture is not None:
        picture = Path(picture)
        _check_picture(picture, texts, count, out_dir, image_format, pictures)
    pictures = 20 if pictures is None else pictures
    image_format = image_format or "png"
    if pictures < 0:
        raise AttnkitError(f"--pictures must be at least 0, got {pictures}")
    if image_format not in ("png", "svg"):
        raise AttnkitError(f"--format must be png or svg, got {image_format!r}")
    translator = translator if translator is not None else Translator.load(model_dir, device)
    cfg = translator.config
    refs: list[str | None]
    if split is not None:
        pairs = split_pairs(cfg.data, split, data_dir)[:count]  # that split alone
        sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    else:
        sources, refs = list(texts), [None] * len(texts)
    outputs = [t.output for t in translator.translate(sources)]
    forced_outputs = list(refs) if reference else outputs
    attention = translator.teacher_forced(sources, forced_outputs)
    saliency = saliency_translations(translator, attention, method)
    attends = translator.model.has_attention
    att_records = [t.record(r) for t, r in zip(attention, refs)]
    sal_records = [t.record(r) for t, r in zip(saliency, refs)]
    scores = {
        "model": str(model_dir),
        "method": method,
        "explained": "reference" if reference else "own output",
        "examples": len(sources),
    }
    aligner = gold_aligner(cfg.data)
    _score(scores, aligner, sources, forced_outputs, attention, saliency, attends)
    if picture is not None:
        picture.parent.mkdir(parents=True, exist_ok=True)
        _draw(att_records[0], sal_records[0], picture, method, attends)
        scores["picture"] = str(picture)
        return scores
    out = Path(out_dir) if out_dir else run_parent(model_dir) / "explain" / Path(model_dir).name
    out.mkdir(parents=True, exist_ok=True)
    for i, (a, s) in enumerate(zip(att_records[:pictures], sal_records[:pictures])):
        _draw(a, s, out / f"{i:03d}.{image_format}", method, attends)
    if attends:
        save_records(att_records, out / "attention.json")
    save_records(sal_records, out / "saliency.json")
    (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    _write_page(out, cfg, method, scores, att_records, sal_records, attends, aligner)
    scores["out"] = str(out)
    return scores


def _check_picture(picture: Path, texts, count, out_dir, image_format, pictures) -> None:
    """AttnkitError unless ``-o FILE`` names one input and a picture file, without the options
    of ``--out`` (its format is the file's suffix)."""
    if out_dir is not None:
        raise AttnkitError("-o FILE draws one picture and --out DIR writes a directory: not both")
    for option, value in (("--format", image_format), ("--pictures", pictures)):
        if value is not None:
            raise AttnkitError(f"{option} is for --out; -o FILE takes its format from its suffix")
    if picture.suffix.lower() not in (".png", ".svg"):
        raise AttnkitError(f"-o {picture}: give a .png or .svg file")
    several = len(texts) != 1 if texts is not None else count != 1
    if several:
        raise AttnkitError("-o FILE draws one input: give one TEXT (or --split with --count 1)")


def _draw(att_record, sal_record, path: Path, method: str, attends: bool) -> None:
    """The two maps side by side on shared axes; a model without attention: the saliency alone,
    saying so (its zero weights are no attention)."""
    if attends:
        titles = ("attention", f"saliency ({method})")
        plot_side_by_side(att_record, sal_record, path, titles=titles).clear()
    else:
        title = TITLE if method == "gradient" else f"no attention: saliency ({method})"
        plot_heatmap(sal_record, path=path, title=title, value_label="saliency").clear()


def _score(scores, aligner, sources, forced_outputs, attention, saliency, attends) -> None:
    """Add to ``scores``: the two maps' agreement and, where the task has gold links (``aligner``
    is not None), both maps scored against them."""
    if attends:
        maps = [(a.weights, s.weights) for a, s in zip(attention, saliency)]
        scores["argmax_agreement"] = argmax_agreement(maps)
        scores["rank_correlation"] = rank_correlation(maps)
    else:
        scores["attention"] = "none"
    if aligner is not None:
        gold = [aligner(src, o) for src, o in zip(sources, forced_outputs)]
        if attends:
            pairs = ((a.weights, g) for a, g in zip(attention, gold))
            scores["attention"] = alignment_metrics(pairs, SYNTHETIC_RULE)
        pairs = ((s.weights, g) for s, g in zip(saliency, gold))
        scores["saliency"] = alignment_metrics(pairs, SYNTHETIC_RULE)


def _write_page(out, cfg, method, scores, att_records, sal_records, attends, aligner) -> None:
    """report.html: every explained example; a model with attention shows it with a choice of
    its saliency (the toggle), one without shows the saliency alone; gold links outlined."""
    shown = []
    for a, s in zip(att_records, sal_records):
        shown.append(dataclasses.replace(a, saliency=s.weights) if attends else s)
    if aligner is not None:
        mark_gold(aligner, shown)
    write_report(
        out / "report.html",
        f"attnkit explain: {cfg.name} ({method} saliency)",
        scores,
        shown,
        notes=None if attends else "This model has no attention: its maps are gradient saliency.",
        map_title=None if attends else TITLE,
    )
