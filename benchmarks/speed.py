#!/usr/bin/env python3
"""Training and decoding speed of attnkit's RNN attention model (or Transformer), side by side
with JoeyNMT.

    # attnkit, then the JoeyNMT anchor
    python benchmarks/speed.py --updates 150
    # the Transformers: 3 + 3 pre-norm layers of width 256, 4 heads, feed-forward 1024
    python benchmarks/speed.py --arch transformer --emb 256 --layers 3 --heads 4 --ff 1024 \
        --updates 150
    python benchmarks/speed.py --updates 150 --no-input-feeding --skip-anchor
    # the plain nn.GRU step loop
    python benchmarks/speed.py --updates 150 --reference-loop
    # fused cells under autograd, packed encoder
    python benchmarks/speed.py --updates 150 --autograd --skip-anchor
    # both, alternating batch by batch
    python benchmarks/speed.py --updates 150 --interleave-autograd --skip-anchor
    # compiled attention kernel vs torch
    python benchmarks/speed.py --updates 150 --interleave-native --skip-anchor
    # the torch.compile'd decoder step
    python benchmarks/speed.py --updates 150 --compile --skip-anchor
    # the textbook model
    python benchmarks/speed.py --updates 150 --backend reference --skip-anchor
    # also: the same updates doing only their matmuls
    python benchmarks/speed.py --updates 150 --matmul-ceiling

The reference model (identical in both toolkits): CMUdict G2P, char source,
phone target; embeddings 128; bi-GRU encoder 256 per direction; bridge; GRU
decoder 256 with input feeding whose new state queries the encoder with
additive (Bahdanau) scores; attentional vector tanh(W[h; c]); dropout 0.2;
Adam 1e-3; clipping; batches of 128 words. With ``--arch transformer``, both toolkits' pre-norm
Transformers of the sizes given (embeddings scaled by sqrt(D), sinusoidal positions, untied output,
Xavier-uniform initialisation, dropout on embeddings, sub-layers and attention weights), trained
and decoded on the same batches the same way.

Prints one JSON line: attnkit's median training target tokens/s (windows of 10
updates, as JoeyNMT logs them), peak memory, greedy and beam-5 decoding of
dev+test (entries/s, model loading included), model FLOPs utilisation against
a matmul peak measured on the spot, then the anchor's numbers and the ratios.

Memory: ``peak_memory_mb`` is this whole process's (on a GPU: the device's peak allocation), which
decodes and measures more than training; ``train_peak_rss_mb`` (with its phases under
``train_memory``) is the peak resident memory of a separate process that only trains the same
model on the same batches for the same updates (``train_memory.py``), which is how the anchor
measures its ``train_peak_rss_mb``; ``train_peak_rss_ratio`` is attnkit's over the anchor's.

``--matmul-ceiling`` adds what no implementation of this model could beat here: the matmuls of real
updates replayed alone (see ``matmul_ceiling.py``), as tokens/s and, with the anchor, as a ratio to
it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import train_memory

from attnkit.accel.backend import BACKENDS, resolve

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "cmudict"
ANCHOR = ROOT.parent / "shared" / "anchors" / "joeynmt_g2p.py"


def matmul_peak_gflops(device: torch.device, n: int = 2048, repeats: int = 10) -> float:
    """Best-of sgemm rate on the spot: the denominator of MFU."""
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        t = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def useful_flops(
    cfg, src_tokens: int, tgt_tokens: int, mean_src_len: float, tgt_vocab: int
) -> float:
    """Forward multiply-adds x 2 of the non-pad tokens, counted per token (the same count for both
    toolkits).

    Training costs 3x this (forward + backward for inputs and weights).
    """
    e, he, h, a = cfg.embedding_dim, cfg.encoder_hidden, cfg.decoder_hidden, cfg.attention_dim
    dirs = 2 if cfg.bidirectional else 1
    gates = 4 if cfg.rnn == "lstm" else 3
    dk = he * dirs
    enc = dirs * gates * he * (e + he) + dk * a  # RNN gates both directions + key projection
    if cfg.decoder_style == "bahdanau":  # RNN input [y; c], output layer on [s; c; y]
        rnn_in, combine_in = e + dk, h + dk + e
    else:  # RNN input [y; h~] (or y), attentional vector from [c; h]
        rnn_in, combine_in = e + (h if cfg.input_feeding else 0), dk + h
    dec = (
        gates * h * (rnn_in + h)  # RNN gates
        + h * a
        + mean_src_len * (a + dk)  # query projection, scores (v . tanh), context
        + combine_in * h
        + h * tgt_vocab
    )  # attentional vector / output layer, vocabulary projection
    return 2.0 * (enc * src_tokens + dec * tgt_tokens)


def transformer_flops(
    cfg, src_tokens: int, tgt_tokens: int, mean_src_len: float, mean_tgt_len: float, vocab: int
) -> float:
    """The Transformer's forward multiply-adds x 2 of the non-pad tokens (as :func:`useful_flops`
    counts the RNN's): projections, feed-forward, attention scores and contexts, output layer."""
    d, f = cfg.embedding_dim, cfg.ff_dim
    enc = cfg.encoder_layers * (4 * d * d + 2 * d * f + 2 * mean_src_len * d)
    enc += cfg.decoder_layers * 2 * d * d  # every decoder layer's cross keys and values
    dec = cfg.decoder_layers * (
        4 * d * d
        + mean_tgt_len * d  # causal self-attention: about half the positions
        + 2 * d * d
        + 2 * mean_src_len * d  # cross-attention queries, output, scores, context
        + 2 * d * f
    )
    return 2.0 * (enc * src_tokens + (dec + d * vocab) * tgt_tokens)


def model_section(args) -> dict:
    """The experiment file's model section for ``--arch``."""
    if args.arch == "transformer":
        return {
            "arch": "transformer",
            "embedding_dim": args.emb,
            "encoder_layers": args.layers,
            "decoder_layers": args.layers,
            "heads": args.heads,
            "ff_dim": args.ff,
            "dropout": args.dropout,
        }
    return {
        "attention": args.attention,
        "decoder": args.decoder,
        "rnn": args.rnn,
        "embedding_dim": args.emb,
        "encoder_hidden": args.hidden,
        "decoder_hidden": args.hidden,
        "attention_dim": args.hidden,
        "input_feeding": not args.no_input_feeding,
        "dropout": args.dropout,
    }


def build(args, device):
    from attnkit.data.batching import encode_pairs, make_batches
    from attnkit.data.tasks import g2p
    from attnkit.data.tokenizers import CharTokenizer, WhitespaceTokenizer
    from attnkit.data.vocab import Vocab
    from attnkit.families.seq2seq.config import experiment_from_dict
    from attnkit.models.architectures import build_model

    splits = g2p.load(args.data)
    cfg = experiment_from_dict(
        {
            "name": "speed",
            "data": {
                "task": "g2p",
                "directory": str(args.data),
                "src_level": "char",
                "tgt_level": "word",
            },
            "model": model_section(args),
            "train": {"batch_size": args.batch_size, "lr": 1e-3, "clip": 1.0},
            "decode": {"batch_size": args.decode_batch_size},
        },
        source="speed benchmark",
    )
    src_tok, tgt_tok = CharTokenizer(), WhitespaceTokenizer()
    src_vocab = Vocab.build(src_tok.tokenize(s) for s, _ in splits.train)
    tgt_vocab = Vocab.build(tgt_tok.tokenize(t) for _, t in splits.train)
    torch.manual_seed(42)
    model = build_model(cfg.model, len(src_vocab), len(tgt_vocab)).to(device)
    # compile: compiled during the untimed warm-up updates
    model.set_backend(resolve(_backend_name(args), device, next(model.parameters()).dtype))
    examples = encode_pairs(splits.train, src_tok, tgt_tok, src_vocab, tgt_vocab)
    batches = make_batches(
        examples, batch_size=args.batch_size, shuffle=True, seed=42, bucket=not args.no_bucketing
    )
    return cfg, splits, (src_tok, tgt_tok, src_vocab, tgt_vocab), model, batches


def _update(model, optimizer, batch) -> tuple[float, int]:
    """One training update (Adam, clipping at 1.0) -> (summed loss, target tokens)."""
    from attnkit.training.loss import token_loss_backward

    optimizer.zero_grad(set_to_none=True)
    loss_sum, _, n = token_loss_backward(model, batch, batch.num_target_tokens, 0.0)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss_sum, n


def train_speed(args, cfg, model, batches, device, tgt_vocab_size: int) -> dict:
    from attnkit.training.optim import adam

    optimizer = adam(model.parameters(), 1e-3)
    model.train()
    times, tokens, srcs = [], [], []
    batches = [b for _, b in zip(range(args.updates + args.warmup), _cycle(batches))]
    for i, batch in enumerate(batches):
        _sync(device)
        t = time.perf_counter()
        batch = batch.to(device)
        loss_sum, n = _update(model, optimizer, batch)
        _sync(device)
        if i >= args.warmup:
            times.append(time.perf_counter() - t)
            tokens.append(batch.num_target_tokens)
            srcs.append(int(batch.src_lengths.sum()))
    windows = [
        sum(tokens[i : i + 10]) / sum(times[i : i + 10]) for i in range(0, len(times) - 9, 10)
    ]
    mean_src = sum(srcs) / len(srcs) / args.batch_size
    if cfg.model.arch == "transformer":
        mean_tgt = sum(tokens) / len(tokens) / args.batch_size
        flops = 3 * transformer_flops(
            cfg.model, sum(srcs), sum(tokens), mean_src, mean_tgt, tgt_vocab_size
        )
    else:
        flops = 3 * useful_flops(cfg.model, sum(srcs), sum(tokens), mean_src, tgt_vocab_size)
    return {
        "train_tokens_per_s_median": round(statistics.median(windows), 1),
        "train_tokens_per_s_mean": round(sum(tokens) / sum(times), 1),
        "train_useful_gflops_per_s": round(flops / sum(times) / 1e9, 2),
        "updates_timed": len(times),
        "final_loss": round(loss_sum / n, 4),
    }


@torch.inference_mode()
def dev_token_accuracy(model, batches, device) -> float:
    """Teacher-forced next-token accuracy on dev (%), dropout off."""
    from attnkit.data.vocab import PAD_ID

    model.eval()
    right = total = 0
    for batch in batches:
        batch = batch.to(device)
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
        mask = batch.tgt_out != PAD_ID
        right += int(((logits.argmax(-1) == batch.tgt_out) & mask).sum())
        total += int(mask.sum())
    model.train()
    return round(100 * right / total, 2)


def same_learning(args, cfg, splits, tokenizers, batches, device) -> dict:
    """Train the default path (on a CPU the handwritten-backward loops) and the plain nn.GRU step
    loop with the packed encoder from the same initial weights on the same batches with the same
    dropout seed; report both dev accuracies."""
    from attnkit.data.batching import encode_pairs, make_batches
    from attnkit.models.seq2seq import Seq2Seq

    src_tok, tgt_tok, src_vocab, tgt_vocab = tokenizers
    dev = make_batches(
        encode_pairs(splits.dev, src_tok, tgt_tok, src_vocab, tgt_vocab), batch_size=256
    )
    out = {}
    for name, backend in (("default", "auto"), ("reference_loop", "reference")):
        torch.manual_seed(42)
        model = Seq2Seq(cfg.model, len(src_vocab), len(tgt_vocab)).to(device)
        model.set_backend(resolve(backend, device))
        quiet = argparse.Namespace(**{**vars(args), "warmup": 0})
        train_speed(quiet, cfg, model, batches, device, len(tgt_vocab))
        out[f"dev_token_accuracy_{name}"] = dev_token_accuracy(model, dev, device)
    return out


def interleaved_comparison(args, model, batches, device, path, names: tuple[str, str]) -> dict:
    """Time two training paths on the same model, alternating them batch by batch (in both orders),
    so a noisy machine slows both alike. ``path(first)`` is a context manager that selects path
    ``names[0]`` (True) or ``names[1]`` (False).

    Reports the median and quartiles of the per-batch time ratio first / second and each path's
    tokens/s over the whole run. Both paths compute the same gradients; the model keeps training on
    them.
    """
    from attnkit.training.optim import adam

    optimizer = adam(model.parameters(), 1e-3)
    model.train()
    seconds = {True: [], False: []}
    tokens = 0
    for i, batch in zip(range(args.updates), _cycle(batches)):
        batch = batch.to(device)
        for first in (True, False) if i % 2 == 0 else (False, True):
            with path(first):
                t = time.perf_counter()
                _update(model, optimizer, batch)
                seconds[first].append(time.perf_counter() - t)
        tokens += batch.num_target_tokens
    ratios = sorted(a / b for a, b in zip(seconds[True], seconds[False]))
    n = len(ratios)
    a, b = names
    return {
        "updates_each": n,
        f"time_ratio_{a}_over_{b}_median": round(statistics.median(ratios), 3),
        "time_ratio_quartiles": [round(ratios[n // 4], 3), round(ratios[3 * n // 4], 3)],
        f"{a}_tokens_per_s": round(tokens / sum(seconds[True]), 1),
        f"{b}_tokens_per_s": round(tokens / sum(seconds[False]), 1),
    }


def interleaved_decoding(
    args, cfg, model, tokenizers, splits, device, path, names: tuple[str, str], rounds: int = 2
) -> dict:
    """Decode dev+test greedy and with beam 5 on both paths, alternating them ``rounds`` times each
    (model loading not included): entries/s of each path and the ratio of their total times."""
    from attnkit.families.seq2seq.translator import Translator

    translator = Translator(model.eval(), cfg, *tokenizers, device)
    entries = [s for s, _ in splits.dev] + [s for s, _ in splits.test]
    out = {}
    a, b = names
    for beam in (1, 5):
        seconds = {True: 0.0, False: 0.0}
        for r in range(rounds):
            for first in (True, False) if r % 2 == 0 else (False, True):
                with path(first):
                    t = time.perf_counter()
                    translator.translate(entries, beam_size=beam, batch_size=args.decode_batch_size)
                    seconds[first] += time.perf_counter() - t
        done = rounds * len(entries)
        out[f"beam{beam}"] = {
            f"{a}_entries_per_s": round(done / seconds[True], 1),
            f"{b}_entries_per_s": round(done / seconds[False], 1),
            f"time_ratio_{a}_over_{b}": round(seconds[True] / seconds[False], 3),
        }
    return out


def ceiling(model, batches, device, count: int = 30) -> dict:
    """:func:`matmul_ceiling.matmul_ceiling` over ``count`` batches (after 3 untimed ones), the
    model training."""
    from matmul_ceiling import matmul_ceiling

    from attnkit.training.optim import adam

    optimizer = adam(model.parameters(), 1e-3)
    model.train()
    chosen = [b.to(device) for _, b in zip(range(count + 3), _cycle(batches))]

    def update(batch) -> int:
        return _update(model, optimizer, batch)[1]

    for batch in chosen[:3]:
        update(batch)
    return matmul_ceiling(chosen[3:], update, lambda: _sync(device))


@contextlib.contextmanager
def _handwritten_path(model, handwritten: bool):
    """The native backend's handwritten loops, or the fused cells under autograd."""
    before = model.backend
    model.set_backend(resolve("native", "cpu") if handwritten else resolve("fused", "cpu"))
    try:
        yield
    finally:
        model.set_backend(before)


def _backend_name(args) -> str:
    """--backend, or what the older switches name."""
    if args.reference_loop:
        return "reference"
    if args.compile:
        return "compile"
    return "fused" if args.autograd else args.backend


def _native_path(on: bool):
    from attnkit.accel import native

    return contextlib.nullcontext() if on else native.disabled()


def _path_name(args, device) -> str:
    if args.reference_loop:
        return "reference-loop"
    if args.no_input_feeding:
        return "whole-sequence"
    return "fused" if args.autograd or device.type != "cpu" else "handwritten-backward"


def _cycle(items):
    while True:
        yield from items


def decode_speed(args, cfg, model, tokenizers, splits, device) -> dict:
    """Save, reload (timed, as JoeyNMT's numbers include loading), decode dev+test entries."""
    from attnkit.families.seq2seq.translator import Translator

    src_tok, tgt_tok, src_vocab, tgt_vocab = tokenizers
    entries = [s for s, _ in splits.dev] + [s for s, _ in splits.test]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        Translator(model, cfg, src_tok, tgt_tok, src_vocab, tgt_vocab, device).save(
            Path(tmp) / "model"
        )
        for beam in (1, 5):
            _sync(device)
            t = time.perf_counter()
            translator = Translator.load(Path(tmp) / "model", device)
            # decoding stays eager under --compile
            decode_backend = "reference" if args.reference_loop else "auto"
            translator.model.set_backend(resolve(decode_backend, device))
            hyps = translator.translate(entries, beam_size=beam, batch_size=args.decode_batch_size)
            _sync(device)
            dt = time.perf_counter() - t
            out[f"beam{beam}"] = {
                "entries": len(entries),
                "decode_wall_s": round(dt, 2),
                "entries_per_s": round(len(entries) / dt, 1),
                "test_wer": _wer(hyps[len(splits.dev) :], splits.test),
            }
    return out


def _wer(hyps, test_pairs) -> float:
    """Word error rate by WORD over the test entries (first entry of each word), as the anchor
    scores."""
    refs, first = {}, {}
    for i, (w, p) in enumerate(test_pairs):
        refs.setdefault(w, set()).add(p)
        first.setdefault(w, i)
    wrong = sum(hyps[i].output not in refs[w] for w, i in first.items())
    return round(100 * wrong / len(first), 2)


def peak_memory_mb(device) -> float:
    if device.type == "cuda":
        return round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_anchor(args) -> dict:
    cmd = [
        sys.executable,
        str(ANCHOR),
        "--updates",
        str(args.updates),
        "--batch-size",
        str(args.batch_size),
        "--emb",
        str(args.emb),
        "--hidden",
        str(args.hidden),
        "--dropout",
        str(args.dropout),
        "--decode",
        "--data",
        str(args.data),
    ]
    if args.no_input_feeding:
        cmd.append("--no-input-feeding")
    if args.arch == "transformer":
        cmd += ["--arch", "transformer", "--layers", str(args.layers)]
        cmd += ["--heads", str(args.heads), "--ff", str(args.ff)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["anchor failed"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _rnn_options(ap: argparse.ArgumentParser) -> None:
    """The options that measure paths of the RNN model only."""
    ap.add_argument(
        "--reference-loop",
        action="store_true",
        help="the plain nn.GRU per-step loop, not the fused cell (with --no-input-feeding: not the "
        "whole-sequence call)",
    )
    ap.add_argument(
        "--autograd",
        action="store_true",
        help="train through autograd: the fused decoder cells step by step and the packed nn.GRU "
        "encoder, not the handwritten-backward loops (the default on a CPU)",
    )
    ap.add_argument(
        "--interleave-autograd",
        action="store_true",
        help="after the rest, train --updates more batches, each once through the "
        "handwritten-backward loops and once through autograd, and report their per-batch time "
        "ratio",
    )
    ap.add_argument(
        "--interleave-native",
        action="store_true",
        help="after the rest, train --updates more batches, each once with the compiled attention "
        "kernel (attnkit.accel.native) and once with torch alone, then decode dev+test both ways, "
        "alternating; report the time ratios",
    )
    ap.add_argument(
        "--matmul-ceiling",
        action="store_true",
        help="after the rest, train 30 more batches, each once timed, once recording its matmuls, "
        "whose replay alone (no other work) is then timed: the ceiling on tokens/s for this model "
        "here",
    )
    ap.add_argument(
        "--same-learning",
        action="store_true",
        help="also train the fused path and the reference loop from one initialisation and compare "
        "dev accuracy",
    )


def parser() -> argparse.ArgumentParser:
    """speed.py's options (train_memory.py takes the same)."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--updates", type=int, default=150, help="timed training updates")
    ap.add_argument("--warmup", type=int, default=5, help="untimed updates first")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument(
        "--attention", default="bahdanau", help="attention type (default bahdanau scores)"
    )
    ap.add_argument(
        "--decoder",
        choices=("luong", "bahdanau"),
        default="luong",
        help="decoder style: luong (JoeyNMT's, the reference) or bahdanau (s_(t-1) queries; needs "
        "--skip-anchor)",
    )
    ap.add_argument(
        "--rnn",
        choices=("gru", "lstm"),
        default="gru",
        help="encoder and decoder cell (the anchor runs GRUs only: lstm needs --skip-anchor)",
    )
    ap.add_argument(
        "--arch",
        choices=("rnn", "transformer"),
        default="rnn",
        help="rnn (the reference model) or transformer (--emb is its width; --layers, --heads, "
        "--ff its size)",
    )
    ap.add_argument("--layers", type=int, default=3, help="transformer: layers of each stack")
    ap.add_argument("--heads", type=int, default=4, help="transformer: attention heads")
    ap.add_argument("--ff", type=int, default=1024, help="transformer: feed-forward width")
    ap.add_argument("--emb", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--batch-size", type=int, default=128, help="words per training batch")
    ap.add_argument("--decode-batch-size", type=int, default=256)
    ap.add_argument(
        "--no-input-feeding",
        action="store_true",
        help="Luong path: RNN over the whole target at once",
    )
    _rnn_options(ap)
    ap.add_argument(
        "--no-bucketing", action="store_true", help="random batches instead of length buckets"
    )
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    ap.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="train.backend for the timed training (attnkit.accel.backend); decoding uses auto",
    )
    ap.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the decoder step for training (train.backend: compile); "
        "decoding stays eager",
    )
    ap.add_argument("--skip-anchor", action="store_true", help="attnkit only")
    return ap


def rnn_extras(args, cfg, model, tokenizers, splits, batches, device, result: dict) -> None:
    """What --same-learning, --interleave-* and --matmul-ceiling add to ``result`` (RNN only)."""
    if args.same_learning:
        result.update(same_learning(args, cfg, splits, tokenizers, batches, device))
    if args.interleave_autograd:
        result["interleaved"] = interleaved_comparison(
            args,
            model,
            batches,
            device,
            lambda on: _handwritten_path(model, on),
            ("handwritten", "autograd"),
        )
    if args.interleave_native:
        from attnkit.accel import native

        result["native_kernel_built"] = native.library() is not None
        result["interleaved_native"] = interleaved_comparison(
            args, model, batches, device, _native_path, ("native", "torch")
        )
        result["interleaved_native_decoding"] = interleaved_decoding(
            args, cfg, model, tokenizers, splits, device, _native_path, ("native", "torch")
        )
    if args.matmul_ceiling:
        result["matmul_ceiling"] = ceiling(model, batches, device)


def compare_with_anchor(args, result: dict) -> None:
    """Run the JoeyNMT anchor on the same settings; its JSON and the ratios go into ``result``."""
    anchor = run_anchor(args)
    result["anchor"] = anchor
    if "error" in anchor:
        return
    result["train_tokens_per_s_ratio"] = round(
        result["train_tokens_per_s_median"] / anchor["train_tokens_per_s_median"], 2
    )
    if args.matmul_ceiling:
        result["matmul_only_train_tokens_per_s_ratio"] = round(
            result["matmul_ceiling"]["matmul_only_tokens_per_s"]
            / anchor["train_tokens_per_s_median"],
            2,
        )
    if result["train_peak_rss_mb"]:
        result["train_peak_rss_ratio"] = round(
            result["train_peak_rss_mb"] / anchor["train_peak_rss_mb"], 2
        )
    for beam in (1, 5):
        result[f"beam{beam}_entries_per_s_ratio"] = round(
            result[f"beam{beam}"]["entries_per_s"] / anchor[f"beam{beam}"]["entries_per_s"], 2
        )


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    if not args.data.is_dir():
        sys.exit(
            f"speed.py: {args.data} not found (the CMUdict G2P split; see shared/data/README.md)"
        )
    rnn_only = ("same_learning", "interleave_autograd", "interleave_native", "matmul_ceiling")
    if args.arch == "transformer" and any(getattr(args, name) for name in rnn_only):
        ap.error("--same-learning, --interleave-* and --matmul-ceiling measure the RNN model")
    if (
        args.arch == "rnn"
        and (args.rnn != "gru" or args.decoder != "luong")
        and not args.skip_anchor
    ):
        ap.error(
            "the JoeyNMT anchor script trains its Luong-style GRU model only: add --skip-anchor"
        )
    if args.threads:
        torch.set_num_threads(args.threads)
    from attnkit.device import resolve_device

    device = resolve_device(args.device)
    peak = matmul_peak_gflops(device)
    cfg, splits, tokenizers, model, batches = build(args, device)
    result = {
        "toolkit": "attnkit",
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
        "threads": torch.get_num_threads(),
        "updates": args.updates,
        "batch_size": args.batch_size,
        "arch": args.arch,
        **(
            {"emb": args.emb, "layers": args.layers, "heads": args.heads, "ff": args.ff}
            if args.arch == "transformer"
            else {
                "attention": args.attention,
                "decoder": args.decoder,
                "rnn": args.rnn,
                "input_feeding": not args.no_input_feeding,
                "path": _path_name(args, device),
            }
        ),
        "backend": model.describe_backend(model.backend),
        "bucketing": not args.no_bucketing,
        "compile": args.compile,
        "matmul_peak_gflops": round(peak, 1),
    }
    result.update(train_speed(args, cfg, model, batches, device, len(tokenizers[3])))
    result["mfu_pct"] = round(100 * result["train_useful_gflops_per_s"] / peak, 1)
    result.update(decode_speed(args, cfg, model, tokenizers, splits, device))
    result["peak_memory_mb"] = peak_memory_mb(device)
    rnn_extras(args, cfg, model, tokenizers, splits, batches, device, result)
    # in a process that only trains, as the anchor measures
    result["train_memory"] = train_memory.measure(sys.argv[1:])
    result["train_peak_rss_mb"] = result["train_memory"].get("train_peak_rss_mb")
    if not args.skip_anchor:
        compare_with_anchor(args, result)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
