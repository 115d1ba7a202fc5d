"""Is attention an explanation on attnkit's own models? Faithfulness beside plausibility on the
numbers or dates task, and Abnar & Zuidema's per-layer comparison on the Transformer.

    python benchmarks/faithfulness.py --task numbers --minutes 1.5 --count 100 \\
        --out docs/results/faithfulness_numbers.json
    python benchmarks/faithfulness.py --model runs/sst2/best --count 500   # any family
    python benchmarks/faithfulness.py --model runs/sst2_s1/best --model runs/sst2_s2/best \\
        --model runs/sst2_mean/best --count 200   # text: + seeds and the uniform baseline

Without ``--model`` it trains, each for at most ``--minutes`` (one thread): the task's Bahdanau
RNN under ``--seeds`` seeds, the same model with its attention frozen uniform
(``model.attention: uniform``, Wiegreffe & Pinter's baseline) and the task's Transformer. Then,
on the first ``--count`` test items:

* test exact match of every model (the uniform baseline's loss of accuracy);
* every faithfulness test (:mod:`attnkit.evaluation.faithfulness`) of the first seed's RNN and
  of the Transformer, each decoding step of their own outputs a decision;
* plausibility: AER of the attention (and the Transformer's rollout and flow) against the task's
  gold links, on the model's own outputs;
* seed variance: the JSD between the attention maps of the seeds, forced along the references;
* per decoder layer of the Transformer, the mean Spearman rho of its raw cross-attention, its
  rollout and its flow through the encoder with leave-one-out (blank-out) and the gradient
  methods (Abnar & Zuidema 2020, Table 1's shape);
* the seconds each test took per decision.

``--transformer-set KEY=VALUE`` changes the Transformer's config, e.g. ``model.encoder_layers=6
model.decoder_layers=6`` for Abnar & Zuidema's depth.

With ``--model`` it runs the faithfulness tests of that checkpoint alone (any family with a
``faithfulness`` method: seq2seq, vision, text). Several ``--model`` (text classifiers of one
task, e.g. seeds of one config) add, on the whole test split: each model's accuracy and F1 of
the last class (positive, for SST-2), and the seed variance (Wiegreffe & Pinter 2019): the JSD
between the attention of every pair of the models with attention, per test sentence. A model
with ``model.attention: none`` and ``pool: mean`` among them is Wiegreffe & Pinter's uniform
baseline: uniform attention over the encoder's states is exactly their mean (the classifier's
pooled vector is ``sum_s a_s h_s`` with ``a_s = 1/S`` over the real words; see
:mod:`attnkit.models.text_classifier`), so it is trained as that. The faithfulness tests
question the first model. Prints JSON and writes it to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import attnkit  # noqa: E402
from attnkit.data.tasks.gold import gold_aligner  # noqa: E402
from attnkit.data.tasks.registry import build_split  # noqa: E402
from attnkit.evaluation.alignment import alignment_metrics  # noqa: E402
from attnkit.evaluation.faithfulness import Options  # noqa: E402
from attnkit.evaluation.faithfulness_attention import seed_variance  # noqa: E402
from attnkit.evaluation.faithfulness_report import run_subjects, summarize  # noqa: E402
from attnkit.evaluation.faithfulness_seq2seq import Seq2SeqSubject, plain  # noqa: E402
from attnkit.evaluation.faithfulness_stats import jsd, spearman  # noqa: E402
from attnkit.explain.rollout import cross_flow, cross_rollout  # noqa: E402

REFERENCES = ("leave_one_out", "gradient", "integrated_gradients")


def train(config: str, overrides: dict, out: Path, minutes: float) -> attnkit.Seq2SeqModel:
    settings = {"train.max_minutes": minutes, "train.threads": 1, "train.tensorboard": False,
                "train.progress": False, **overrides}  # fmt: skip
    start = time.perf_counter()
    run = attnkit.train(config, overrides=settings, output_dir=out, overwrite=True)
    model = attnkit.load(run.best)
    model.train_minutes = round((time.perf_counter() - start) / 60, 2)
    return model


def exact_match(model, sources: list[str], refs: list[str]) -> float:
    outputs = [t.output for t in model.translate(sources)]
    return round(100.0 * sum(o == r for o, r in zip(outputs, refs)) / len(refs), 2)


def plausibility(model, subjects, results) -> dict:
    """AER of each attention-derived map against the gold links of the model's own outputs."""
    aligner = gold_aligner(model.config.data)
    if aligner is None:
        return {}
    gold = [aligner(s.text, s.output) for s in subjects]
    names = [n for n in results[0].scores if n in ("attention", "rollout", "flow")]
    names += ["integrated_gradients", "leave_one_out"]
    out = {}
    for name in names:  # rows made distributions, so that entropy and coverage mean something
        maps = [r.scores[name].clamp_min(0) for r in results]
        maps = [m / m.sum(-1, keepdim=True).clamp_min(1e-12) for m in maps]
        out[name] = alignment_metrics((m.numpy(), g) for m, g in zip(maps, gold))
    return out


def per_layer(subjects, results) -> list[dict]:
    """Per decoder layer: mean Spearman rho of raw / rollout / flow with each reference."""
    rows = []
    layers = subjects[0].cross_by_layer.size(0)
    for layer in range(layers):
        row = {"layer": layer + 1}
        for kind in ("raw", "rollout", "flow"):
            for ref in REFERENCES:
                rhos = []
                for s, r in zip(subjects, results):
                    cross = s.cross_by_layer[layer]  # (T, S)
                    if kind == "rollout":
                        cross = cross_rollout(cross, s.encoder_attention)
                    elif kind == "flow":
                        cross = cross_flow(cross, s.encoder_attention)
                    for a, b in zip(cross.tolist(), r.scores[ref].tolist()):
                        rho = spearman(a, b).value
                        if not np.isnan(rho):
                            rhos.append(rho)
                row[f"{kind}~{ref}"] = round(float(np.mean(rhos)), 4) if rhos else None
        rows.append(row)
    return rows


def question(model, sources: list[str], options: Options):
    with plain(model.translator.model):
        subjects = [Seq2SeqSubject(model.translator, s) for s in sources]
        start = time.perf_counter()
        results = run_subjects(subjects, options)
        seconds = time.perf_counter() - start
    summary = summarize(results)
    units = summary["units"]
    summary["seconds_per_decision"] = {
        k: round(v / units, 4) for k, v in summary["seconds"].items()
    }
    summary["seconds_total"] = round(seconds, 2)
    return subjects, results, summary


def forced_maps(model, sources, refs) -> list[torch.Tensor]:
    return [torch.from_numpy(t.weights) for t in model.translator.teacher_forced(sources, refs)]


def task_benchmark(args) -> dict:
    tmp = Path(args.runs or tempfile.mkdtemp(prefix="faith-"))
    task = args.task
    rnn_cfg, tf_cfg = f"configs/{task}_bahdanau.yaml", f"configs/{task}_transformer.yaml"
    pairs = build_split(_data_cfg(rnn_cfg), "test")
    pairs = pairs[: args.count]
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    options = Options(permutations=args.permutations, adversarial_steps=args.adversarial_steps,
                      ig_steps=args.ig_steps)  # fmt: skip
    seeds = [train(rnn_cfg, {"train.seed": s}, tmp / f"rnn{s}", args.minutes)
             for s in range(1, args.seeds + 1)]  # fmt: skip
    uniform = train(rnn_cfg, {"model.attention": "uniform", "model.decoder": "bahdanau"},
                    tmp / "uniform", args.minutes)  # fmt: skip
    bad = [item for item in args.transformer_set if "=" not in item]
    if bad:
        raise SystemExit(f"--transformer-set {bad[0]!r}: give KEY=VALUE")
    # typed as the command line's --set types them: "6" is an integer
    tf_sets = {k: yaml.safe_load(v) for k, v in (i.split("=", 1) for i in args.transformer_set)}
    transformer = train(tf_cfg, tf_sets, tmp / "transformer", args.minutes)
    out = {"task": task, "count": len(sources), "transformer_overrides": tf_sets, "models": {}}
    for name, model in [*((f"bahdanau seed {i + 1}", m) for i, m in enumerate(seeds)),
                        ("uniform", uniform), ("transformer", transformer)]:  # fmt: skip
        out["models"][name] = {"exact_match": exact_match(model, sources, refs),
                               "train_minutes": model.train_minutes}  # fmt: skip
    for name, model in (("bahdanau", seeds[0]), ("transformer", transformer)):
        subjects, results, summary = question(model, sources, options)
        out[name] = {
            "faithfulness": summary,
            "plausibility": plausibility(model, subjects, results),
        }
        if name == "transformer":
            out[name]["per_layer"] = per_layer(subjects, results)
    out["seed_variance"] = seed_variance([forced_maps(m, sources, refs) for m in seeds])
    return out


def question_checkpoint(args) -> dict:
    """The faithfulness tests of the first ``--model`` on the first ``--count`` test items; with
    ``--adversarial-count`` N below the count, the adversarial search (the slow test) runs on the
    first N alone, in a second pass."""
    model = attnkit.load(args.model[0])
    report = args.report_dir or Path(tempfile.mkdtemp(prefix="faith-report-"))
    few = args.adversarial_count is not None and args.adversarial_count < args.count
    scores = model.faithfulness(count=args.count, permutations=args.permutations, out=report,
                                adversarial_steps=0 if few else args.adversarial_steps,
                                ig_steps=args.ig_steps).to_dict()  # fmt: skip
    if few:
        again = model.faithfulness(count=args.adversarial_count, permutations=0,
                                   out=report / "adversarial", ig_steps=args.ig_steps,
                                   adversarial_steps=args.adversarial_steps).to_dict()  # fmt: skip
        scores["summary"]["adversarial"] = {
            **again["summary"]["adversarial"],
            "examples": again["summary"]["examples"],
            "seconds": again["summary"]["seconds"].get("adversarial"),
        }
    return {"model": str(args.model[0]), **scores}


def _f1(predicted: list[int], gold: list[int], positive: int) -> float:
    tp = sum(p == positive and g == positive for p, g in zip(predicted, gold))
    fp = sum(p == positive and g != positive for p, g in zip(predicted, gold))
    fn = sum(p != positive and g == positive for p, g in zip(predicted, gold))
    return 2 * tp / max(2 * tp + fp + fn, 1)


def _compare(runs: list[dict], gold: list[int], classes: int) -> dict:
    """``runs``: per model {"name", "attention", "pool", "seed", "predicted": labels, "maps":
    (R, S) tensors per sentence or None} -> accuracy and F1 of the last class of each, the seed
    variance of those with attention and how far the first one's attention is from uniform."""
    rows, maps = {}, []
    for run in runs:
        predicted = run["predicted"]
        rows[run["name"]] = {
            **{k: run.get(k) for k in ("attention", "pool", "seed")},
            "accuracy": round(100.0 * sum(p == g for p, g in zip(predicted, gold)) / len(gold), 2),
            "f1_last_class": round(_f1(predicted, gold, classes - 1), 4),
        }
        if run["maps"] is not None:
            maps.append(run["maps"])
    out = {"test_sentences": len(gold), "models": rows, "seed_variance": None}
    if len(maps) > 1:
        out["seed_variance"] = seed_variance(maps)
    if maps:  # the JSD of the first model's attention from uniform attention, per sentence
        flat = [jsd(m.float(), torch.full_like(m.float(), 1.0 / m.size(-1))) for m in maps[0]]
        out["first_model_jsd_from_uniform"] = round(float(torch.cat(flat).mean()), 6)
    return out


def text_models(paths: list[Path]) -> dict:
    """Several text classifiers on the whole test split: accuracy, F1 of the last class, and
    the seed variance of the attention of those that have one."""
    from attnkit.data.tasks.text import TextData
    from attnkit.families.text.scoring import predict

    models = [attnkit.load(p) for p in paths]
    if any(m.family != "text" for m in models):
        raise SystemExit("several --model: text classifiers of one task (seeds, uniform baseline)")
    test = TextData(models[0].config.data).split("test")
    words, gold = [e.words for e in test], [e.label for e in test]
    runs = []
    for path, model in zip(paths, models):
        answers = predict(model.net, words, model.vocab)
        cfg = model.config.model
        runs.append({
            "name": str(path),
            "attention": cfg.attention,
            "pool": cfg.pool if cfg.attention == "none" else None,
            "seed": getattr(getattr(model.config, "train", None), "seed", None),
            "predicted": [a.label for a in answers],
            "maps": None if not model.has_attention else [
                torch.as_tensor(a.weights).reshape(-1, len(w)) for a, w in zip(answers, words)
            ],
        })  # fmt: skip
    return _compare(runs, gold, len(models[0].labels))


def saved_maps(paths: list[Path]) -> dict:
    """The same comparison from each model's saved answers on the test split: a JSON list, one
    object per test sentence in order, {"words", "label" (gold), "probs", "weights" (null
    without attention)}."""
    runs, gold, classes = [], None, None
    for path in paths:
        items = json.loads(path.read_text(encoding="utf-8"))
        labels = [x["label"] for x in items]
        if gold is not None and labels != gold:
            raise SystemExit(f"--maps {path}: not the same test sentences as {paths[0]}")
        gold, classes = labels, len(items[0]["probs"])
        has = items[0]["weights"] is not None
        runs.append({
            "name": path.parent.name,
            "attention": "yes" if has else "none",
            "predicted": [max(range(classes), key=x["probs"].__getitem__) for x in items],
            "maps": [torch.tensor(x["weights"]).reshape(-1, len(x["words"])) for x in items]
            if has else None,
        })  # fmt: skip
    return _compare(runs, gold, classes)


def _data_cfg(config: str):
    from attnkit.families.seq2seq.config import load_experiment

    return load_experiment(ROOT / config).data


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--task", choices=("numbers", "dates"), default="numbers")
    p.add_argument("--model", type=Path, action="append", default=None,
                   help="question this checkpoint alone (repeatable: text classifiers; the first "
                   "is questioned, all are compared)")  # fmt: skip
    p.add_argument("--count", type=int, default=100, help="test items (default 100)")
    p.add_argument("--minutes", type=float, default=1.5, help="training budget per model")
    p.add_argument("--seeds", type=int, default=3, help="RNN seeds for the seed variance")
    p.add_argument("--permutations", type=int, default=100)
    p.add_argument("--adversarial-steps", type=int, default=100)
    p.add_argument("--ig-steps", type=int, default=16)
    p.add_argument("--adversarial-count", type=int, default=None,
                   help="--model: run the adversarial search on the first N items only "
                   "(default: all --count)")  # fmt: skip
    p.add_argument("--maps", type=Path, action="append", default=None,
                   help="text: instead of checkpoints, compare saved test answers (repeatable): a "
                   "JSON list per model, one {words, label, probs, weights} per test sentence; "
                   "accuracy, F1, seed variance")  # fmt: skip
    p.add_argument("--transformer-set", action="append", default=[], metavar="KEY=VALUE",
                   help="override of the task's Transformer config (repeatable), e.g. "
                   "model.encoder_layers=6")  # fmt: skip
    p.add_argument("--runs", type=Path, default=None, help="where to train (default: a temp dir)")
    p.add_argument("--out", type=Path, default=None, help="write the JSON here too")
    p.add_argument("--report-dir", type=Path, default=None,
                   help="--model: where scores.json and report.html go (default: a temp dir, "
                   "so that nothing is written beside the checkpoint)")  # fmt: skip
    args = p.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    if args.maps is not None:
        result = saved_maps(args.maps)
    elif args.model is not None:
        result = question_checkpoint(args)
        if len(args.model) > 1:
            result["compared"] = text_models(args.model)
    else:
        result = task_benchmark(args)
    result["machine"] = {"cpu": platform.processor() or platform.machine(),
                         "torch": torch.__version__, "threads": 1}  # fmt: skip
    result["wall_minutes"] = round((time.perf_counter() - start) / 60, 2)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
