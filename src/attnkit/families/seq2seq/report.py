"""The seq2seq family's ``attnkit evaluate``: decode a split, or the user's files, greedily and
with beam search, and write everything down.

Output directory: ``hyps.greedy.txt``, ``hyps.beamK.txt`` (one output per
evaluated source, in order), ``scores.json``, ``attention.json`` and ``report.html`` (metrics
and the attention of the examples :mod:`attnkit.evaluation.examples` chooses: every error up
to a bound, first, then right answers; a translation task's each with its sentence chrF). The
scores are the checkpoint's task metric's (:func:`attnkit.data.tasks.registry.task_metric`);
``scores.json`` names the one that decides.

A model without attention (``model.attention: none``, or an ensemble of such models) has no
attention to score or draw: ``scores.json`` has no ``alignment`` block, and ``saliency.json``
and the report hold the gradient saliency of those examples' outputs instead
(:mod:`attnkit.explain.no_attention`; an ensemble of them has no pictures).

A Transformer's examples also carry their attention rollout and flow through the encoder
(:mod:`attnkit.explain.rollout`, forced along each output), which the report's map menu offers
beside the raw attention; flow, a max-flow per cell, only within a bound of work per example and
per report (:data:`REPORT_FLOW_WORK`), the report's notes saying how many have it.

The examples' maps are bounded (:func:`attnkit.evaluation.examples.within_cells`): on long inputs
(a list of 20 numbers is 500 characters) the report keeps the first chosen examples whose maps
fit :data:`attnkit.evaluation.examples.MAX_CELLS`, and its notes say how many it left out.
``examples`` (``attnkit evaluate --examples N``) chooses at most N; 0 writes the scores and
hypotheses alone: no example is decoded again, rolled out or pictured.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from attnkit.config import applicable
from attnkit.data.tasks.gold import gold_aligner
from attnkit.data.tasks.registry import task_metric
from attnkit.errors import AttnkitError
from attnkit.evaluation.alignment import mark_gold, score_alignments
from attnkit.evaluation.examples import (
    MAX_CELLS,
    MAX_ERRORS,
    MAX_EXAMPLES,
    choose,
    is_translation,
    judge,
    judged_record,
    tally,
    within_cells,
)
from attnkit.evaluation.inputs import EvalFiles, split_pairs
from attnkit.evaluation.summary import default_eval_dir
from attnkit.explain.no_attention import NOTE, TITLE, can_explain, pictured
from attnkit.families.seq2seq.evaluate import evaluate_translator
from attnkit.families.seq2seq.translator import Translator
from attnkit.viz import Tally, save_records, write_report

#: the most attention-flow work one report spends on its examples (about 10 s of CPU)
REPORT_FLOW_WORK = 1_000_000


def evaluate_model(
    model_dirs: Path | Sequence[Path],
    split: str = "test",
    beam: int = 5,
    alpha: float | None = None,
    out_dir: Path | None = None,
    device: str = "auto",
    files: EvalFiles | None = None,
    translator=None,
    examples: int = MAX_EXAMPLES,
    data_dir: str | Path | None = None,
) -> dict:
    """Score one checkpoint, or several decoding as an ensemble (the data and decode settings are
    the first's), on ``split`` or, when given, on the user's ``files``.

    The default output directory is :func:`default_eval_dir`: beside the checkpoint, never inside it
    (the next save of the checkpoint would delete it). ``translator``: the checkpoints already
    loaded (the Python API's model, which loads an ensemble), so that they are not read again;
    without it, one checkpoint is loaded here. ``examples``: the most examples the report
    pictures (errors first), within the bound of map cells; 0: none. ``split`` is read from
    ``data_dir``, else the data directory, never from the checkpoint's own data paths
    (:func:`attnkit.evaluation.inputs.split_pairs`).
    """
    dirs = (
        [Path(model_dirs)] if isinstance(model_dirs, (str, Path)) else [Path(d) for d in model_dirs]
    )
    files = files if files is not None and files.given else None
    file_pairs = files.read() if files is not None else None  # bad files fail before loading
    if translator is None and len(dirs) > 1:
        raise AttnkitError("several checkpoints decode as an ensemble: load them with attnkit.load")
    translator = translator if translator is not None else Translator.load(dirs[0], device)
    cfg = translator.config
    family = task_metric(cfg.data).family
    pairs = file_pairs if files is not None else split_pairs(cfg.data, split, data_dir)
    set_name = files.name if files is not None else split
    out = Path(out_dir) if out_dir else default_eval_dir(dirs, set_name)
    out.mkdir(parents=True, exist_ok=True)
    scores = _header(dirs, translator, split, files)
    attends = translator.model.has_attention
    records, counts, flow_note = [], None, None
    for k in [1] if beam == 1 else [1, beam]:
        name = "greedy" if k == 1 else f"beam{k}"
        t0 = time.time()
        metrics, sources, refs, translations = evaluate_translator(
            translator, family, pairs, beam_size=k, alpha=alpha, progress=True
        )
        seconds = time.time() - t0
        scores[name] = {
            **metrics,
            "decode_s": round(seconds, 2),
            "inputs_per_s": round(len(sources) / seconds, 1),
        }
        (out / f"hyps.{name}.txt").write_text(
            "".join(t.output + "\n" for t in translations), encoding="utf-8"
        )
        if k == 1:
            aligner = gold_aligner(cfg.data)
            if aligner is not None and attends:
                scores["alignment"] = score_alignments(
                    translator, aligner, sources, refs, translations
                )
            right = judge([t.output for t in translations], refs)
            wanted = choose(right, min(MAX_ERRORS, examples), examples)
            chosen = within_cells(wanted, _cells(translator, translations))
            shown = pictured(translator, [translations[i] for i in chosen])
            _add_heads(translator, [sources[i] for i in chosen], shown)
            chrf = is_translation(cfg.data)
            records = [judged_record(t, refs[i], i, chrf) for t, i in zip(shown, chosen)]
            flow_note = _add_rollout(translator, [sources[i] for i in chosen], records)
            flow_note = _bound_note(len(chosen), len(wanted), examples, flow_note)
            if aligner is not None:
                mark_gold(aligner, records)
            counts = tally(right)
    (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    title = f"attnkit evaluate: {cfg.name} ({cfg.data.task}, {set_name})"
    _write_examples(out, title, translator, scores, records, counts, flow_note)
    scores["out"] = str(out)
    return scores


def _cells(translator, translations) -> list[int]:
    """Each translation's map cells as a report example: output steps x source tokens, times the
    maps it carries (a Transformer's: the mean, each decoder layer's heads, rollout and flow)."""
    model = translator.config.model
    maps = 1
    if getattr(model, "arch", "rnn") == "transformer":
        maps += model.decoder_layers * model.heads + 2
    return [maps * len(t.output_tokens) * len(t.source_tokens) for t in translations]


def _bound_note(shown: int, wanted: int, examples: int, note: str | None) -> str | None:
    """The report's notes, with a line on the examples the bounds left out."""
    if examples == 0:
        line = "No example is pictured (examples 0): the scores and hypotheses alone."
    elif shown < wanted:
        line = (
            f"{shown} of {wanted} chosen examples are pictured: the others' maps pass the "
            f"report's bound of {MAX_CELLS:,} cells (long inputs; --examples chooses fewer)."
        )
    else:
        return note
    return line if note is None else f"{note} {line}"


def _add_heads(translator, sources: list[str], shown: list) -> None:
    """Give the report's examples every layer's and head's attention, where the model has them
    (a Transformer): the few shown inputs are decoded again keeping them (the whole split is not:
    beam search would carry them for every input), and an example takes them when the output is
    the same."""
    if getattr(translator.config.model, "arch", "rnn") != "transformer" or not shown:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the first decoding warned already
        again = translator.translate(sources, heads=True, warn_unknown=False)
    for t, kept in zip(shown, again):
        if kept.heads is not None and kept.output_tokens == t.output_tokens:
            t.heads = kept.heads


def _add_rollout(translator, sources: list[str], records: list) -> str | None:
    """Give a Transformer's example records their attention rollout and, within the bounds of
    work, their flow; the line the report's notes say of them (None for other models)."""
    model = translator.model
    if not hasattr(model, "encoder_attention") or not records:
        return None  # an RNN, or an ensemble (no one encoder to roll out)
    from attnkit.evaluation.faithfulness_seq2seq import plain
    from attnkit.explain.rollout import FLOW_WORK, along_tokens, flow_work

    examples, _ = translator.encode_sources(sources, warn_unknown=False, warn=False)
    left, with_flow = REPORT_FLOW_WORK, 0
    with plain(model):
        for record, example in zip(records, examples):
            bound = min(FLOW_WORK, left)
            maps, _ = along_tokens(translator, example.src, record.output_tokens, bound)
            record.rollout, record.flow = maps["rollout"], maps.get("flow")
            if record.flow is not None:
                with_flow += 1
                left -= flow_work(len(model.encoder.layers), len(example.src), len(record.weights))
    note = (
        "Each example's map menu also offers the attention rollout and flow through the encoder "
        "(Abnar & Zuidema 2020)"
    )
    if with_flow < len(records):
        return (
            f"{note}; flow, a max-flow per cell, is drawn for {with_flow} of the "
            f"{len(records)} examples (the others are past the report's bound of work)."
        )
    return note + "."


def _header(dirs: list[Path], translator, split: str, files: EvalFiles | None) -> dict:
    """What was scored, how, and by which metric: the first keys of scores.json."""
    cfg = translator.config
    metric = task_metric(cfg.data)
    members = getattr(translator.model, "members", [translator.model])
    return {
        "model": str(dirs[0]) if len(dirs) == 1 else [str(d) for d in dirs],
        "task": cfg.data.task,
        "split": None if files is not None else split,
        **({"files": files.describe()} if files is not None else {}),
        "metric": metric.key,  # the score that decides (best checkpoint, early stopping)
        "higher_is_better": metric.higher_is_better,
        # an ensemble lists each member's own attention: they may differ
        "attention": cfg.model.attention
        if len(dirs) == 1
        else [member.cfg.attention for member in members],
        # all members load with one setting
        "backend": members[0].describe_backend(members[0].backend),
    }


def _write_examples(
    out: Path,
    title: str,
    translator,
    scores: dict,
    records: list,
    counts: Tally | None,
    notes: str | None = None,
) -> None:
    """The chosen examples' maps as records and report.html: their attention (attention.json),
    or for a model without attention their saliency (saliency.json), the report saying so and
    counting the errors of the whole evaluation (``counts``); ``notes`` a line for the page."""
    attends = translator.model.has_attention
    save_records(records, out / ("attention.json" if attends else "saliency.json"))
    notes = notes if attends else NOTE
    if not attends and not can_explain(translator):
        notes = "These models have no attention, and saliency is drawn for one model alone."
    write_report(
        out / "report.html",
        title,
        scores,
        records,
        config=applicable(translator.config),
        notes=notes,
        map_title=None if attends else TITLE,
        tally=counts,
    )
