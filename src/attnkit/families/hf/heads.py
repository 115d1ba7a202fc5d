"""A pretrained model's head summaries (:mod:`attnkit.explain.head_summary`) measured as Olsson et
al. (2022) measure induction heads: on a random block of ``n`` ordinary tokens of the model's
vocabulary, seeded, said twice (``[the tokenizer's leading specials, x, x, its trailing ones]``),
so that every score, the induction score included, is read from one forward under
:func:`attnkit.capture` with the model's own SDPA attention.

An encoder-decoder reads ``[x, x]`` in its encoder and is fed ``[start, x, x]`` in its decoder;
its summary is of the decoder's self-attention unless ``part="encoder"``.
"""

from __future__ import annotations

import torch

from attnkit.errors import AttnkitError, InputError
from attnkit.families.hf.inputs import max_positions
from attnkit.families.hf.words import from_ids

#: the block's length when none is asked for (TransformerLens's induction tests use 50), shortened
#: to what the model holds
PERIOD = 50


def specials(tokenizer) -> tuple[list[int], list[int]]:
    """(the ids the tokenizer puts before a text, those it puts after): found by where the
    tokens of an ordinary word sit in that word's encoding with its special tokens."""
    word = tokenizer("the", add_special_tokens=False)["input_ids"]
    full = tokenizer("the")["input_ids"]
    for start in range(len(full) - len(word) + 1):
        if full[start : start + len(word)] == word:
            return full[:start], full[start + len(word) :]
    raise AttnkitError("head summary: cannot tell where the tokenizer puts its special tokens")


def summary(model, part: str | None = None, period: int | None = None, seed: int = 0):
    """See :meth:`attnkit.families.hf.model.PretrainedModel.head_summary`."""
    from attnkit.explain.head_summary import repeated_tokens, summarize

    if model.takes_images:
        raise AttnkitError(
            f"head_summary: {model.name} reads images, and the induction score needs a repeated "
            "token sequence; summarize an image's attention with result.head_summary()"
        )
    pair = bool(getattr(model.model.config, "is_encoder_decoder", False))
    parts = ("encoder", "decoder") if pair else ("self",)
    name = (parts[-1] if part is None else part) if pair else (part or "self")
    if name not in parts:
        raise AttnkitError(
            f"part {name!r}: {model.name}'s head summaries are of {', '.join(parts)}"
        )
    tokenizer = model.processor
    before, after = specials(tokenizer)
    period = _period(model, tokenizer, period, len(before) + len(after) + int(pair))
    banned = set(tokenizer.all_special_ids)
    block = repeated_tokens(
        [i for i in range(len(tokenizer)) if i not in banned], period, seed
    ).tolist()
    ids = before + block + after
    forward = {"input_ids": torch.tensor([ids], device=model.device)}
    forward["attention_mask"] = torch.ones_like(forward["input_ids"])
    tokens = from_ids(tokenizer, ids)
    needed = {parts[0]: (tokens, tokens)}
    offset = len(before)
    if pair:
        fed = [_start(model)] + block
        forward["decoder_input_ids"] = torch.tensor([fed], device=model.device)
        needed["decoder"] = (from_ids(tokenizer, fed),) * 2
        offset = 1 if name == "decoder" else 0
    _, found = model._attend(forward, needed)
    chosen = found[name]
    what = "self-attention" if name == "self" else f"{name} self-attention"
    title = f"{model.name}: {what}, a random block of {period} tokens twice (seed {seed})"
    return summarize(
        chosen.heads, chosen.causal, period, offset, modules=list(chosen.modules), title=title
    )


def _period(model, tokenizer, period: int | None, extra: int) -> int:
    """The block's length: ``period``, checked to fit twice in the model's positions with
    ``extra`` more, or :data:`PERIOD` shortened to fit."""
    limit, where = max_positions(model.model, tokenizer)
    room = None if limit is None else (limit - extra) // 2
    if period is None:
        period = PERIOD if room is None else min(PERIOD, room)
    elif isinstance(period, bool) or not isinstance(period, int) or period < 2:
        raise InputError(f"period must be a whole number at least 2, got {period!r}", "period")
    elif room is not None and period > room:
        raise InputError(
            f"period {period}: {model.name} holds {limit} positions ({where}), so at most "
            f"{room} tokens said twice",
            "period",
        )
    if period < 2:
        raise InputError(f"{model.name} holds too few positions for a repeated block", "period")
    return period


def _start(model) -> int:
    """The id an encoder-decoder's decoder starts from."""
    for config in (model.model.generation_config, model.model.config):
        start = getattr(config, "decoder_start_token_id", None)
        if isinstance(start, int):
            return start
    raise AttnkitError(f"{model.name}: its config names no decoder_start_token_id")


def command(args) -> str:
    """``attnkit explain --model hf:NAME --heads [TEXT]``: the table (or ``--json``) it prints;
    the picture goes to ``-o FILE``, or ``heads.png`` and ``heads.json`` to ``--out DIR``."""
    import json
    from pathlib import Path

    from attnkit.families.hf.model import PretrainedModel

    if args.split is not None or args.reference or args.node is not None:
        raise AttnkitError("--heads: summarize a typed TEXT or the repeated block, not --split")
    if len(args.texts) > 1:
        raise AttnkitError("--heads: give at most one TEXT (none: a random block said twice)")
    if (args.output is None) == (args.out is None):
        raise AttnkitError("--heads: give -o FILE (.png, .svg, .pdf) or --out DIR, one of them")
    if args.output is not None and args.output.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise AttnkitError(f"-o {args.output}: use a .png, .svg or .pdf file name")
    model = PretrainedModel.load(args.model, args.device)
    if args.texts:
        found = model.run(args.texts[0]).head_summary()
    else:
        found = model.head_summary()
    sort = args.sort or ("induction" if found.induction is not None else "entropy")
    picture = args.output
    if args.out is not None:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        picture = Path(args.out) / "heads.png"
        (Path(args.out) / "heads.json").write_text(json.dumps(found.to_dict()), encoding="utf-8")
    found.plot(picture).clear()
    if args.json:
        return json.dumps(found.rows(sort))
    uniform = f"(uniform attention's entropy: {found.entropy_max:.3f} nats)"
    return f"{found.title} {uniform}\n{found.table(sort)}\npicture: {picture}"
