"""``attnkit evaluate``: decode a split greedily and with beam search, write everything down.

Output directory: ``hyps.greedy.txt``, ``hyps.beamK.txt`` (one output per
evaluated source, in order), ``scores.json`` and ``report.html`` (metrics and
the attention of the first examples).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from attnkit.data.tasks.registry import build_splits, task_info
from attnkit.evaluation.evaluate import evaluate_translator
from attnkit.translator import Translator
from attnkit.viz import save_records, write_report

REPORT_EXAMPLES = 40


def evaluate_model(model_dir: Path, split: str = "test", beam: int = 5, alpha: float | None = None,
                   out_dir: Path | None = None, device: str = "auto") -> dict:
    translator = Translator.load(model_dir, device)
    cfg = translator.config
    _, family, metric, _ = task_info(cfg.data.task)
    pairs = getattr(build_splits(cfg.data), split)
    out = Path(out_dir) if out_dir else Path(model_dir) / f"eval-{split}"
    out.mkdir(parents=True, exist_ok=True)
    scores = {"model": str(model_dir), "task": cfg.data.task, "split": split, "attention": cfg.model.attention}
    records = []
    for k in ([1] if beam == 1 else [1, beam]):
        name = "greedy" if k == 1 else f"beam{k}"
        t0 = time.time()
        metrics, sources, refs, translations = evaluate_translator(translator, family, pairs, beam_size=k, alpha=alpha,
                                                                   progress=True)
        seconds = time.time() - t0
        scores[name] = {**metrics, "decode_s": round(seconds, 2), "inputs_per_s": round(len(sources) / seconds, 1)}
        (out / f"hyps.{name}.txt").write_text("".join(t.output + "\n" for t in translations), encoding="utf-8")
        if k == 1:
            records = [t.record(r[0]) for t, r in zip(translations[:REPORT_EXAMPLES], refs[:REPORT_EXAMPLES])]
    (out / "scores.json").write_text(json.dumps(scores, indent=1), encoding="utf-8")
    save_records(records, out / "attention.json")
    write_report(out / "report.html", f"attnkit evaluate: {cfg.name} ({cfg.data.task}, {split})", scores, records,
                 config=json.loads(json.dumps(cfg, default=lambda o: o.__dict__)))
    scores["out"] = str(out)
    return scores
