#!/usr/bin/env python3
"""Attention and saliency of English->French models against human word alignments (the Hansards
test set of the NAACL 2003 shared task: 447 pairs, sure and possible links).

    python benchmarks/hansards.py --model runs/multi30k_en_fr/best --model runs/enfr_tf/best
    python benchmarks/hansards.py --model M --maps attention,gradient --eflomal

For each ``--model`` (an attnkit en->fr checkpoint) and each map (``attention``, and the
saliency methods ``gradient``, ``input_x_gradient``, ``integrated_gradients``), the model is made
to write each gold pair's French side; its map over subwords is brought to words (source pieces
summed, target pieces averaged: :mod:`attnkit.evaluation.word_alignment`) and each French word
linked to its most-attended English word. Printed as one JSON object: AER, precision and recall
(%) per model and map, with the timings and the machine.

``--eflomal``: a statistical aligner for comparison, eflomal (``pip install eflomal``; GPL,
used here only, never by attnkit), trained on Multi30k's 29,000 en-fr training pairs (lower-cased,
tokenized and with French contractions split as the gold set writes them) plus the 447 gold
sentences, scored forward, reverse, intersected and grow-diag-final-and.

The gold set is parliament speech; attnkit's Multi30k models learnt image captions: the domain
and the vocabulary differ (many words are unknown to them), which weighs on every figure here.
Published anchors, after training on 1.1M Hansards sentences: fast_align 10.5% AER, GIZA++
5.5-5.9%.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # machine_info beside this script
from machine_info import describe  # noqa: E402

from attnkit.data.tasks.human_gold import read_human_gold  # noqa: E402
from attnkit.evaluation.word_alignment import MAP_KINDS, score_word_alignment  # noqa: E402
from attnkit.families.seq2seq.translator import Translator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
#: French contractions as the gold set writes them ("au" -> "à le")
CONTRACTIONS = {"au": "à le", "aux": "à les", "du": "de le", "des": "de les"}


def score_model(path: Path, pairs, maps: list[str], device: str) -> dict:
    translator = Translator.load(path, device)
    cfg = translator.config
    out = {"model": str(path), "arch": getattr(cfg.model, "arch", "rnn")}
    out["attention_type"] = getattr(cfg.model, "attention", None)
    for kind in maps:
        if kind == "attention" and not translator.model.has_attention:
            continue
        start = time.perf_counter()
        out[kind] = score_word_alignment(translator, pairs, kind)
        out[kind]["seconds"] = round(time.perf_counter() - start, 1)
    return out


def tokenize(text: str, french: bool) -> str:
    """Lower-cased words and punctuation; French elisions and contractions split."""
    text = text.lower()
    if french:
        text = re.sub(r"\b([cdjlmnst]|qu)'", r"\1e ", text).replace("qe ", "que ")
    words = re.findall(r"\w+(?:-\w+)*|[^\w\s]", text)
    return " ".join(CONTRACTIONS.get(w, w) if french else w for w in words)


def eflomal_scores(pairs, data_dir: Path) -> dict:
    import eflomal  # noqa: PLC0415 (optional)

    def read(name):
        with gzip.open(data_dir / name, "rt", encoding="utf-8") as f:
            return f.read().splitlines()

    english = [tokenize(s, False) for s in read("train.en.gz")]
    french = [tokenize(s, True) for s in read("train.fr.gz")]
    english += [" ".join(p.source) for p in pairs]  # the gold sentences last, as is the custom
    french += [" ".join(p.target) for p in pairs]
    start = time.perf_counter()
    fwd, rev = _eflomal_links(eflomal, english, french)
    seconds = round(time.perf_counter() - start, 1)
    n = len(pairs)
    fwd, rev = fwd[-n:], rev[-n:]
    ways = {
        "forward": fwd,
        "reverse": rev,
        "intersection": [f & r for f, r in zip(fwd, rev)],
        "grow_diag_final_and": [
            grow_diag_final_and(f, r, len(p.source), len(p.target))
            for f, r, p in zip(fwd, rev, pairs)
        ],
    }
    out = {name: link_scores(links, pairs) for name, links in ways.items()}
    out["seconds"] = seconds
    out["training_pairs"] = len(english)
    return out


def _eflomal_links(eflomal, english: list[str], french: list[str]):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        fwd_path, rev_path = Path(tmp) / "fwd", Path(tmp) / "rev"
        eflomal.Aligner().align(
            english, french, links_filename_fwd=str(fwd_path), links_filename_rev=str(rev_path)
        )
        return _links(fwd_path), _links(rev_path)


def _links(path: Path) -> list[set[tuple[int, int]]]:
    """Pharaoh links ``i-j`` (0-based source i, target j) per line, as (source, target) sets."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [{tuple(map(int, x.split("-"))) for x in line.split()} for line in lines]


def grow_diag_final_and(fwd: set, rev: set, n_src: int, n_tgt: int) -> set:
    """The usual symmetrisation (Koehn et al. 2003): start from the intersection, grow into
    neighbouring union links that align an unaligned word, then add union links whose words
    are both unaligned."""
    union, links = fwd | rev, fwd & rev
    neighbours = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]
    grown = True
    while grown:
        grown = False
        for i, j in sorted(links):
            for di, dj in neighbours:
                cand = (i + di, j + dj)
                if cand in union and cand not in links:
                    src_free = all(a != cand[0] for a, _ in links)
                    tgt_free = all(b != cand[1] for _, b in links)
                    if src_free or tgt_free:
                        links.add(cand)
                        grown = True
    for i, j in sorted(union):
        if all(a != i for a, _ in links) and all(b != j for _, b in links):
            links.add((i, j))
    return {(i, j) for i, j in links if i < n_src and j < n_tgt}


def diagonal(pair) -> set[tuple[int, int]]:
    """The trivial alignment: each target word linked to the source word at the same relative
    place (source, target)."""
    n_src, n_tgt = len(pair.source), len(pair.target)
    return {(round(j * (n_src - 1) / max(1, n_tgt - 1)), j) for j in range(n_tgt)}


def link_scores(links: list[set], pairs) -> dict:
    """AER, precision and recall (%) of sets of (source, target) links, pooled."""
    a = s = a_s = a_p = 0
    for found, pair in zip(links, pairs):
        as_gold = {(j, i) for i, j in found}  # gold links are (target, source)
        a, s = a + len(as_gold), s + len(pair.gold.sure)
        a_s += len(as_gold & pair.gold.sure)
        a_p += len(as_gold & pair.gold.possible)
    return {
        "aer": round(100 * (1 - (a_s + a_p) / max(1, a + s)), 2),
        "precision": round(100 * a_p / max(1, a), 2),
        "recall": round(100 * a_s / max(1, s), 2),
        "links": a,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", type=Path, action="append", default=[], help="en->fr checkpoint")
    ap.add_argument(
        "--maps",
        default="attention,gradient",
        help=f"comma-separated, of {', '.join(MAP_KINDS)} (default attention,gradient)",
    )
    ap.add_argument("--gold", type=Path, default=SHARED / "gold_alignments", help="gold set dir")
    ap.add_argument("--eflomal", action="store_true", help="also score eflomal (pip install)")
    ap.add_argument("--multi30k", type=Path, default=SHARED / "multi30k", help="eflomal's data")
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda")
    args = ap.parse_args()
    maps = [m.strip() for m in args.maps.split(",") if m.strip()]
    unknown = sorted(set(maps) - set(MAP_KINDS))
    if unknown:
        raise SystemExit(f"--maps: unknown {', '.join(unknown)}; valid: {', '.join(MAP_KINDS)}")
    pairs = read_human_gold(args.gold / "enfr.src-tgt", args.gold / "enfr.gold")
    result = {"pairs": len(pairs), "models": []}
    result["sure_links"] = sum(len(p.gold.sure) for p in pairs)
    result["possible_links"] = sum(len(p.gold.possible) for p in pairs)
    result["diagonal_baseline"] = link_scores([diagonal(p) for p in pairs], pairs)
    for path in args.model:
        result["models"].append(score_model(path, pairs, maps, args.device))
    if args.eflomal:
        result["eflomal"] = eflomal_scores(pairs, args.multi30k)
    result["machine"] = describe()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
