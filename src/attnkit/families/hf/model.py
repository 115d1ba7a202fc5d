"""A pretrained Hugging Face Transformer in Python: ``attnkit.load("hf:DIR")`` (or ``hf:MODEL_ID``
from the Hugging Face cache) gives a :class:`PretrainedModel`, whose method depends on what the
model is::

    m = attnkit.load("hf:./my-bert")          # a sequence classifier
    r = m.classify("the cat sat on the mat")
    r.label, r.probs                          # its answer
    r.show()                                  # every layer and head, inline in a notebook
    r.plot("bert.png", layer=2, head=1)       # one map, counted from 1
    r.rollout()                               # (T, T) attention rollout
    m.explain("the cat sat", method="integrated_gradients").show()  # beside gradient saliency

``classify(text)`` (sequence classifiers; ``classify(image)`` for image classifiers such as ViT),
``encode(text or image)`` (encoders without a head), ``generate(prompt, max_new_tokens=)``
(causal language models: GPT-2, Llama) and ``translate(text)`` (encoder-decoders: Marian, T5,
BART) each return a :class:`~attnkit.families.hf.results.PretrainedResult` per input. The model
keeps running SDPA attention; the weights come from :func:`attnkit.capture` around one forward:
the input's (a classifier, an encoder) or the whole output's, teacher-forced (a generator).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnkit.errors import AttnkitError, InputError
from attnkit.families import arguments as check
from attnkit.families.hf import checks
from attnkit.families.hf import inputs as given
from attnkit.families.hf.kinds import Kind, open_model
from attnkit.families.hf.loading import SCHEME, Source, locate
from attnkit.families.hf.results import Part, PretrainedResult
from attnkit.families.hf.words import Tokens, from_encoding, from_ids, joined


class PretrainedModel:
    """A loaded Hugging Face model (``model``, in eval mode with SDPA attention), its tokenizer or
    image processor (``processor``) and its :class:`~attnkit.families.hf.kinds.Kind`."""

    family = SCHEME

    def __init__(self, source: Source, model, processor, kind: Kind):
        self.source, self.model, self.processor, self.kind = source, model, processor, kind
        self.device = next(model.parameters()).device

    @classmethod
    def load(
        cls,
        path: str | Path,
        device: str = "auto",
        *,
        download: bool = False,
        dtype: str | torch.dtype = "float32",
    ) -> PretrainedModel:
        """``hf:NAME`` (or ``NAME``): a directory holding a model's ``save_pretrained`` files, or
        a model id in the Hugging Face cache. Nothing is fetched unless ``download`` (and
        ``HF_HUB_OFFLINE`` is not set); no code from a hub is run. ``dtype``: float32 (default),
        bfloat16 or float16."""
        from attnkit.device import resolve_device

        check.flag(download, "download")
        source = locate(path, download)
        model, processor, kind = open_model(source, resolve_device(device), dtype)
        return cls(source, model, processor, kind)

    @property
    def name(self) -> str:
        """``hf:NAME``, as loaded."""
        return self.source.label

    @property
    def architecture(self) -> str:
        return type(self.model).__name__

    @property
    def takes_images(self) -> bool:
        return self.model.main_input_name == "pixel_values"

    def __repr__(self) -> str:
        return f"PretrainedModel({self.name}: {self.architecture}, {self.kind.words})"

    # ---- the tasks ---------------------------------------------------------------------------
    def classify(self, inputs: Any) -> PretrainedResult | list[PretrainedResult]:
        """The label of a text (a sequence classifier) or an image (an image classifier: a file,
        its bytes, a PIL image or an array), with its probabilities and attention; a list: one
        result each. A wrong input is one InputError naming it (``text[1]``, ``image``)."""
        self._only("classify")
        checks.inputs(self, inputs)
        return self._each(inputs, self._classify_one)

    def encode(self, inputs: Any) -> PretrainedResult | list[PretrainedResult]:
        """An encoder's attention over a text (or an image), and its last hidden states
        (``states``, (T, D)); a list: one result each."""
        self._only("encode")
        checks.inputs(self, inputs)
        return self._each(inputs, self._encode_one)

    def generate(
        self, prompts: str | Sequence[str], max_new_tokens: int = 20, beam: int = 1
    ) -> PretrainedResult | list[PretrainedResult]:
        """Greedy (``beam`` 1) or beam-search continuation of a prompt by a causal language
        model, at most ``max_new_tokens`` tokens, and the self-attention over the whole sequence
        (prompt and continuation) of one forward along it; a list: one result each."""
        self._only("generate")
        checks.texts(prompts, "prompts")
        checks.writing(max_new_tokens, beam)
        return self._each(prompts, lambda p: self._generate_one(p, max_new_tokens, beam))

    def translate(
        self, texts: str | Sequence[str], max_new_tokens: int | None = None, beam: int = 1
    ) -> list[PretrainedResult]:
        """One result per input (a string is one input), as attnkit's translators give theirs:
        the output, and the encoder's self-attention, the decoder's and the cross-attention of
        the output teacher-forced (its rows: the output tokens, ``</s>`` included). ``beam`` 1 is
        greedy; ``max_new_tokens`` None: the model's generation config decides."""
        self._only("translate")
        checks.texts(texts, "texts")
        checks.writing(max_new_tokens, beam, optional=True)
        texts = [texts] if isinstance(texts, str) else list(texts)
        return [self._translate_one(text, max_new_tokens, beam) for text in texts]

    def explain(self, inputs: Any, method: str = "gradient", steps: int = 16, words: bool = False):
        """The model's own task on a text (a list: one each), its attention beside the gradient
        saliency of its answer over the input tokens (``method``: gradient, input_x_gradient,
        integrated_gradients; ``steps``: integrated-gradients points): an
        :class:`~attnkit.explain.explanation.Explanation` (:mod:`attnkit.families.hf.gradients`
        says what each task explains)."""
        from attnkit.families.hf.gradients import explain

        method = checks.explaining(self, inputs, method, steps, words)
        return self._each(inputs, lambda text: explain(self, self.run(text), method, steps, words))

    def faithfulness(
        self,
        texts: str | Sequence[str] | None = None,
        *,
        data: str | Path | None = None,
        count: int = 10,
        out: str | Path | None = None,
        permutations: int = 100,
        adversarial_steps: int = 100,
        ig_steps: int = 16,
        seed: int = 0,
    ):
        """Is a text classifier's attention an explanation of its label? ``texts`` (or the
        first ``count`` texts of the file ``data``: lines, ``label<TAB>text`` or SST trees)
        questioned as every attnkit model is (:mod:`attnkit.families.hf.erasure`): erasure
        (comprehensiveness, sufficiency, AOPC) by attention, rollout, gradients, leave-one-out
        and random, rank agreement, the permutation test and the adversarial search; scores.json
        and report.html written to ``out`` (None: not written). Returns
        :class:`~attnkit.evaluation.scores.FaithfulnessScores`."""
        from attnkit.families.hf.erasure import faithfulness

        options = {"ig_steps": ig_steps, "permutations": permutations, "seed": seed}
        options["adversarial_steps"] = adversarial_steps
        checks.questioning(texts, data, count, out, options)
        return faithfulness(self, texts, data, count, None if out is None else Path(out), **options)

    def alignment_error(self, gold: str | Path, layer: int | None = None, count: int | None = None):
        """A translator's cross-attention as word alignments of the human-aligned pairs of
        ``gold`` (a ``NAME.src-tgt``/``NAME.gold`` pair or their directory), teacher-forced,
        scored by AER, precision and recall (:mod:`attnkit.families.hf.aligning`); ``layer``
        (from 1): that layer's heads, None: every layer's and head's mean; ``count``: the first
        pairs only."""
        from attnkit.families.hf.aligning import alignment_error

        checks.aligning(gold, layer, count)
        return alignment_error(self, gold, layer, count)

    def head_summary(self, part: str | None = None, period: int | None = None, seed: int = 0):
        """Every layer's and head's entropy, sink share, previous-token and induction scores and
        distance profile (:class:`~attnkit.explain.head_summary.HeadSummary`, layers and heads
        from 1), read from one forward over a random block of ``period`` tokens drawn with
        ``seed``, said twice (:mod:`attnkit.families.hf.heads`; ``period`` None: 50, or what
        fits). ``part``: an encoder-decoder's ``"decoder"`` (default) or ``"encoder"``."""
        from attnkit.families.hf.heads import summary

        checks.summarizing(self, part, period, seed)
        return summary(self, part, period, seed)

    def run(self, one: Any) -> PretrainedResult:
        """The model's own task (:attr:`kind`'s) on one input: what ``attnkit plot`` draws."""
        answer = getattr(self, self.kind.task)(one)
        return answer[0] if isinstance(answer, list) else answer

    def _only(self, task: str) -> None:
        if self.kind.task != task:
            raise AttnkitError(
                f"{task}: {self.name} is {self.kind.words} ({self.architecture}); "
                f"call .{self.kind.task}(...)"
            )

    @staticmethod
    def _each(inputs, one):
        if isinstance(inputs, (list, tuple)):
            return [one(x) for x in inputs]
        return one(inputs)

    # ---- one input ---------------------------------------------------------------------------
    def _text(self, text: Any, extra: int = 0):
        if self.takes_images:
            raise InputError(
                f"{self.name} reads images: give a file, a PIL image or an array", "text"
            )
        encoding = given.encode_text(self.processor, self.model, text, self.name, extra)
        tokens = from_encoding(self.processor, encoding, text)
        taken = inspect.signature(self.model.forward).parameters  # token_type_ids, where taken
        return {k: v.to(self.device) for k, v in encoding.items() if k in taken}, tokens

    def _input(self, one: Any) -> tuple[dict, Tokens | None, str, dict]:
        """(the forward's inputs, the tokens (None: an image's patches), the input in words,
        an image's picture as the model read it: ``{"picture": (H, W, 3)}``)."""
        if not self.takes_images:
            forward, tokens = self._text(one)
            return forward, tokens, one, {}
        pixels, what, seen = given.encode_image(self.processor, one)
        dtype = next(self.model.parameters()).dtype
        return {"pixel_values": pixels.to(self.device, dtype)}, None, what, {"picture": seen}

    def _patches(self, picture: dict, parts: dict[str, Part]) -> dict:
        """An image result's picture and its patches' grid (none for a text)."""
        count = parts["self"].heads.shape[2]
        return {**picture, "patches": given.patch_grid(self.model, count)} if picture else {}

    def _classify_one(self, one: Any) -> PretrainedResult:
        forward, tokens, what, picture = self._input(one)
        output, parts = self._attend(forward, {"self": (tokens, tokens)})
        logits = output.logits[0].float().cpu()
        multi = getattr(self.model.config, "problem_type", None) == "multi_label_classification"
        probs = torch.sigmoid(logits) if multi else torch.softmax(logits, -1)
        names = [str(self.model.config.id2label.get(i, i)) for i in range(logits.numel())]
        best = int(logits.argmax())
        return PretrainedResult(
            self.name,
            "classify",
            what,
            names[best],
            parts,
            label=names[best],
            probs={n: float(p) for n, p in zip(names, probs)},
            logits=logits.numpy(),
            **self._patches(picture, parts),
        )

    def _encode_one(self, one: Any) -> PretrainedResult:
        forward, tokens, what, picture = self._input(one)
        output, parts = self._attend(forward, {"self": (tokens, tokens)})
        states = getattr(output, "last_hidden_state", None)
        states = None if states is None else states[0].float().cpu().numpy()
        pictured = self._patches(picture, parts)
        return PretrainedResult(self.name, "encode", what, "", parts, states=states, **pictured)

    def _generate_one(self, prompt: Any, max_new_tokens: int, beam: int) -> PretrainedResult:
        forward, tokens = self._text(prompt, extra=max_new_tokens)
        sequence = self._generated(forward, max_new_tokens=max_new_tokens, num_beams=beam)
        written = sequence[forward["input_ids"].shape[1] :]
        everything = joined(tokens, from_ids(self.processor, written))
        along = {"input_ids": torch.tensor([sequence], device=self.device)}
        along["attention_mask"] = torch.ones_like(along["input_ids"])
        _, parts = self._attend(along, {"self": (everything, everything)})
        text = self.processor.decode(written, skip_special_tokens=True)
        return PretrainedResult(self.name, "generate", prompt, text, parts, ids=sequence)

    def _translate_one(self, text: Any, max_new_tokens: int | None, beam: int) -> PretrainedResult:
        forward, source = self._text(text)
        options = {"num_beams": beam}
        if max_new_tokens is not None:
            options["max_new_tokens"] = max_new_tokens
        sequence = self._generated(forward, **options)  # the decoder's start token first
        emitted = from_ids(self.processor, sequence[1:])
        first = self.processor.convert_ids_to_tokens([sequence[0]])[0]
        along = {**forward, "decoder_input_ids": torch.tensor([sequence[:-1]], device=self.device)}
        tokens = {
            "encoder": (source, source),
            "decoder": (emitted, emitted.shifted(str(first))),
            "cross": (emitted, source),
        }
        _, parts = self._attend(along, tokens)
        output = self.processor.decode(sequence[1:], skip_special_tokens=True)
        return PretrainedResult(self.name, "translate", text, output, parts, ids=sequence)

    def _generated(self, forward: dict, **options) -> list[int]:
        """The model's ``generate`` (no sampling) of one input, as a list of ids."""
        pad = self.processor.pad_token_id
        if pad is None:
            pad = self.processor.eos_token_id
        with torch.no_grad():
            out = self.model.generate(**forward, do_sample=False, pad_token_id=pad, **options)
        return [int(i) for i in out[0]]

    # ---- attention ---------------------------------------------------------------------------
    def _attend(self, forward: dict, tokens: dict[str, tuple]) -> tuple[Any, dict[str, Part]]:
        """The model's output of one forward, and its attention in parts (``tokens``: part ->
        (queries, keys), None for an image's patches)."""
        from attnkit.explain.capture import capture

        with torch.no_grad(), capture(self.model) as captured:
            output = self.model(**forward)
        encoder = self._encoder_name()
        found: dict[str, list] = {}
        for record in captured.select(forward=-1):
            if encoder is None:
                name = "self"
            elif record.kind == "cross":
                name = "cross"
            else:
                inside = record.name == encoder or record.name.startswith(encoder + ".")
                name = "encoder" if inside else "decoder"
            found.setdefault(name, []).append(record)
        return output, {name: self._part(found, name, tokens[name]) for name in tokens}

    def _part(self, found: dict, name: str, axes: tuple) -> Part:
        records = found.get(name)
        if not records:
            raise AttnkitError(f"{self.name}: its forward made no {name} attention call")
        heads = np.stack([r.weights[0].numpy() for r in records])  # (L, H, T, S)
        queries, keys = axes
        if queries is None:  # an image's patches
            queries = keys = Tokens.positions(given.patch_labels(self.model, heads.shape[2]))
        if (len(queries), len(keys)) != heads.shape[2:]:
            raise AttnkitError(
                f"{self.name}: its {name} attention is {heads.shape[2]} x {heads.shape[3]}, "
                f"its tokens {len(queries)} x {len(keys)}"
            )
        kind = "cross" if name == "cross" else "self"
        causal = all(r.causal for r in records)
        return Part(heads, queries, keys, [r.name for r in records], kind, causal)

    def _encoder_name(self) -> str | None:
        """The qualified name of an encoder-decoder's encoder; None for a model of one stack."""
        if not getattr(self.model.config, "is_encoder_decoder", False):
            return None
        encoder = self.model.get_encoder()
        names = {id(m): n for n, m in self.model.named_modules()}
        return names[id(encoder)]
