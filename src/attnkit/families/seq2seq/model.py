"""A seq2seq checkpoint in Python: translate, explain, evaluate.

Used by ``attnkit translate``, ``plot``, ``explain`` and ``evaluate``, by ``attnkit serve`` and by
notebooks::

    model = attnkit.load("runs/demo/model/best")
    t = model.translate("siebenundneunzig")[0]
    t.output, t.weights              # "97", (T, S) attention
    t.show()                         # the interactive heatmap inline
    model.explain("dreiundzwanzig").show()   # attention beside gradient saliency
    model.evaluate(split="test")["greedy"]

:class:`Seq2SeqModel` is the one object a user holds: it loads one checkpoint or an ensemble and
checks every argument once (:meth:`Seq2SeqModel.search_options`, :meth:`Seq2SeqModel.prepare`,
which the server checks its requests with too); decoding is the service underneath,
:class:`attnkit.families.seq2seq.translator.Translator` (``model.translator``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from attnkit.data.tasks.gold import gold_aligner
from attnkit.data.text_input import Prepared
from attnkit.data.vocab import target_prefix_ids
from attnkit.decoding.search import SearchOptions
from attnkit.errors import AttnkitError, InputError
from attnkit.evaluation.scores import Scores
from attnkit.explain.explanation import Explanation
from attnkit.families import arguments as check
from attnkit.families.seq2seq.ensemble import load_translator
from attnkit.families.seq2seq.translator import Translation, Translator


class Seq2SeqModel:
    """A loaded seq2seq checkpoint (RNN encoder-decoder or Transformer), or several decoding as
    an ensemble. ``translator`` is the decoding service underneath (vocabularies, tokenizers,
    ``model``: the torch module), which takes the arguments this object has checked;
    ``config`` the run's resolved experiment config."""

    family = "seq2seq"

    def __init__(self, translator: Translator, paths: Sequence[Path] = ()):
        self.translator = translator
        self.paths = [Path(p) for p in paths]

    @classmethod
    def load(cls, directories: str | Path | Sequence[str | Path], device="auto") -> Seq2SeqModel:
        """One checkpoint directory, or several that decode as one ensemble."""
        dirs = [directories] if isinstance(directories, str | Path) else list(directories)
        return cls(load_translator(dirs, device), dirs)

    @property
    def config(self):
        return self.translator.config

    @property
    def path(self) -> Path | None:
        return self.paths[0] if self.paths else None

    @property
    def has_attention(self) -> bool:
        return bool(self.translator.model.has_attention)

    def __repr__(self) -> str:
        m = self.config.model
        kind = "transformer" if getattr(m, "arch", "rnn") == "transformer" else m.attention
        return f"Seq2SeqModel({kind}, task={self.config.data.task}, {self.path})"

    def search_options(
        self,
        beam: int = 1,
        n_best: int = 1,
        alpha: float | None = None,
        prefix: Sequence[str] | None = None,
        top_k: int = 0,
        heads: bool = False,
    ) -> SearchOptions:
        """How to decode, checked: the one check of :meth:`translate`'s settings, which the
        server checks each request's with too. ``alpha`` None is the checkpoint's length
        penalty; ``prefix`` tokens must be tokens of the target vocabulary. A setting that cannot
        be is an :class:`~attnkit.errors.InputError` naming it (``beam``, ``n_best``, ``alpha``,
        ``top_k``, ``prefix[i]``); ``beam`` and ``top_k`` are bounded by
        :data:`~attnkit.families.arguments.MAX_BEAM` and ``MAX_TOP_K``."""
        beam = check.integer(beam, "beam", 1, check.MAX_BEAM)
        n_best = check.integer(n_best, "n_best")
        if not 1 <= n_best <= beam:
            raise InputError(
                f"n_best must be between 1 and the beam size ({beam}), got {n_best}", "n_best"
            )
        alpha = self.config.decode.alpha if alpha is None else alpha
        if isinstance(alpha, float) and not (math.isfinite(alpha) and alpha >= 0):
            raise InputError(
                f"alpha, the length penalty, must be finite and >= 0, got {alpha}", "alpha"
            )
        alpha = check.number(alpha, "alpha", 0)
        top_k = check.integer(top_k, "top_k", 0, check.MAX_TOP_K)
        if prefix is not None and not isinstance(prefix, str):  # a string: its characters
            prefix = check.texts(prefix, "prefix")
        prefix_ids = tuple(target_prefix_ids(self.translator.tgt_vocab, prefix)) if prefix else None
        return SearchOptions(beam, alpha, n_best, prefix_ids, heads, top_k)

    def prepare(
        self,
        texts: str | Sequence[str],
        names: Sequence[str] | None = None,
        allow_blank: bool = True,
        warn: bool = True,
    ) -> Prepared:
        """``texts`` (a string is one input) checked and tokenized once, as :meth:`translate`
        reads them: an input the model cannot read is an :class:`~attnkit.errors.InputError`
        naming it (``names[i]``, default ``input i+1``); a blank one gives a blank output, with a
        warning (``warn``), or with ``allow_blank`` False an error. The server prepares each
        request's inputs with it and decodes what it prepared."""
        texts = check.texts(texts, "texts")
        return self.translator.prepare(texts, names=names, allow_blank=allow_blank, warn=warn)

    def translate(
        self,
        texts: str | Sequence[str],
        beam: int = 1,
        n_best: int = 1,
        alpha: float | None = None,
        prefix: Sequence[str] | None = None,
        top_k: int = 0,
        heads: bool = True,
        progress: bool = False,
    ) -> list[Translation]:
        """One :class:`Translation` per input (a string is one input), in order: the output, its
        log-probability ``score``, the attention ``weights`` (T, S) and, for a Transformer with
        ``heads``, every layer's and head's map. ``beam`` 1 is greedy; ``n_best`` outputs per
        input (``Translation.nbest``); ``alpha`` the length penalty (default: the checkpoint's);
        ``prefix``: target tokens every output begins with; ``top_k``: keep the k most likely
        tokens of every greedy step (``Translation.top``). A blank input gives a blank output.
        Settings are checked by :meth:`search_options`, inputs by :meth:`prepare`."""
        how = self.search_options(beam, n_best, alpha, prefix, top_k, heads)
        results = self.translator.decode(self.prepare(texts), how, progress=progress)
        _mark_gold(self.config.data, results)
        return results

    def explain(self, text: str, method: str = "gradient", reference: str | None = None):
        """The attention of one input's output beside the gradient saliency of the same output
        (``method``: gradient, input-x-gradient, integrated-gradients; captum computes them), and
        their agreement. ``reference``: explain that output instead of the model's own."""
        from attnkit.explain.saliency import METHODS
        from attnkit.families.seq2seq.explain import explain_output

        method = check.text(method, "method").replace("-", "_")
        if method not in METHODS:
            valid = ", ".join(METHODS)
            raise InputError(
                f"method: unknown saliency method {method!r}; valid: {valid}", "method"
            )
        _one_text(text, "explain")
        if reference is not None:
            check.text(reference, "reference")
        output = self.translate(text, heads=False)[0].output if reference is None else reference
        forced, salient, scores = explain_output(
            self.translator, text, output, method, self.has_attention
        )
        _mark_gold(self.config.data, [forced])
        attention = forced.weights if self.has_attention else None
        return Explanation(
            forced.source,
            forced.source_tokens,
            forced.output,
            forced.output_tokens,
            attention,
            salient.weights,
            method,
            scores,
            forced.gold,
        )

    def explain_report(
        self,
        texts: Sequence[str] | None = None,
        *,
        split: str | None = None,
        count: int = 10,
        method: str = "gradient",
        reference: bool = False,
        out: str | Path | None = None,
        image_format: str | None = None,
        pictures: int | None = None,
        picture: str | Path | None = None,
        data_dir: str | Path | None = None,
    ) -> dict:
        """What ``attnkit explain`` writes: ``texts`` (or the first ``count`` items of
        ``split``, read from ``data_dir`` or the data directory, never from the checkpoint's own
        data paths; their own outputs or with ``reference`` the references) explained, scored
        (agreement of attention and saliency; both against gold links where the task has them)
        and drawn (the first ``pictures``, as ``image_format``) into ``out`` with
        attention.json, saliency.json, scores.json and report.html (default
        ``RUN/explain/CHECKPOINT``); with ``picture``, one input drawn to that file alone.
        Returns the scores."""
        from attnkit.families.seq2seq.explain_report import explain_model

        if not self.paths:
            raise AttnkitError("explain_report: this model was not loaded from a checkpoint")
        return explain_model(
            self.paths[0],
            texts=None if texts is None else ([texts] if isinstance(texts, str) else list(texts)),
            split=split,
            count=count,
            method=method.replace("-", "_"),
            reference=reference,
            out_dir=None if out is None else Path(out),
            image_format=image_format,
            pictures=pictures,
            picture=None if picture is None else Path(picture),
            translator=self.translator,
            data_dir=_data_dir(data_dir),
        )

    def faithfulness(
        self,
        texts: str | Sequence[str] | None = None,
        *,
        split: str | None = None,
        count: int = 10,
        out: str | Path | None = None,
        permutations: int = 100,
        adversarial_steps: int = 100,
        ig_steps: int = 16,
        seed: int = 0,
        data_dir: str | Path | None = None,
    ):
        """Is the attention an explanation? ``texts`` (or the first ``count`` items of ``split``,
        test by default, read from ``data_dir`` or the data directory) questioned at every step
        of the model's own output: erasure (comprehensiveness, sufficiency, AOPC) by attention,
        rollout and flow (a Transformer), gradients, leave-one-out and random; rank agreement;
        the permutation test and the adversarial search (RNN attention). Writes scores.json
        and report.html to ``out`` (default ``RUN/faithfulness/CHECKPOINT``). Returns
        :class:`FaithfulnessScores`."""
        from attnkit.evaluation.faithfulness import Options
        from attnkit.evaluation.faithfulness_seq2seq import seq2seq_faithfulness
        from attnkit.evaluation.scores import FaithfulnessScores

        texts = [texts] if isinstance(texts, str) else texts
        options = Options(
            ig_steps=ig_steps,
            permutations=permutations,
            adversarial_steps=adversarial_steps,
            seed=seed,
        )
        out = _default_out(self.path, "faithfulness") if out is None else Path(out)
        scores = seq2seq_faithfulness(
            self.translator, texts, split, count, out, options, str(self.path or ""),
            family=self.family, data_dir=_data_dir(data_dir),
        )  # fmt: skip
        return FaithfulnessScores(scores)

    def rollout(self, text: str) -> dict:
        """A Transformer's attention rollout and flow (Abnar & Zuidema 2020) of one input, forced
        along its own output: {"source_tokens", "output_tokens", and arrays "attention",
        "rollout", "flow" ((T, S): each output step over the source), "encoder_rollout",
        "encoder_flow" ((S, S): each top encoder position over the source), "cross_by_layer"
        ((L, T, S): each decoder layer's cross-attention, heads averaged)}."""
        from attnkit.families.seq2seq.explain import rollout_maps

        if not hasattr(self.translator.model, "encoder_attention"):
            raise AttnkitError("rollout: attention rollout and flow are for Transformer models")
        _one_text(text, "rollout")
        return rollout_maps(self.translator, text)

    def evaluate(
        self,
        split: str = "test",
        *,
        src: str | Path | None = None,
        ref: str | Path | None = None,
        tsv: str | Path | None = None,
        beam: int = 5,
        alpha: float | None = None,
        out: str | Path | None = None,
        examples: int | None = None,
        data_dir: str | Path | None = None,
    ) -> Scores:
        """Decode ``split`` (or the files ``src`` + ``ref``, or one ``tsv`` of source, tab,
        reference) greedily and with beam search, score with the task's metric, and write the
        hypotheses, scores.json and report.html to ``out`` (default ``RUN/eval/CHECKPOINT-SPLIT``
        beside the checkpoint). ``split`` is read from ``data_dir`` (a downloaded data set's
        folder, or the folder holding your own split's file by its training name), else
        ``$ATTNKIT_DATA_DIR/<name>``, else the user cache; never from the checkpoint's own data
        paths, and nothing is downloaded. ``examples``: the most examples the report pictures
        with their attention (default 120, errors first, within its bound of map cells); 0:
        none, the scores and hypotheses alone."""
        from attnkit.evaluation.examples import MAX_EXAMPLES
        from attnkit.evaluation.inputs import EvalFiles
        from attnkit.families.seq2seq.report import evaluate_model

        self.search_options(beam, alpha=alpha)  # before anything is decoded
        shown = MAX_EXAMPLES if examples is None else check.integer(examples, "examples", 0)
        if src is None and ref is None and tsv is None:
            check.choice(split, "split", SPLITS)
        if not self.paths:
            raise AttnkitError("evaluate: this model was not loaded from a checkpoint directory")
        files = EvalFiles(*(None if p is None else Path(p) for p in (src, ref, tsv)))
        out_dir = None if out is None else Path(out)
        scores = evaluate_model(
            self.paths,
            split,
            beam,
            alpha,
            out_dir,
            files=files,
            translator=self.translator,
            examples=shown,
            data_dir=_data_dir(data_dir),
        )
        return Scores(scores)


def _data_dir(data_dir) -> Path | None:
    """``data_dir`` checked as an argument (a path or None)."""
    return None if data_dir is None else check.path(data_dir, "data_dir")


#: the splits a seq2seq task is made in
SPLITS = ("train", "dev", "test")


def _default_out(path: Path | None, name: str) -> Path | None:
    """``RUN/NAME/CHECKPOINT`` beside a checkpoint; None for a model not loaded from one."""
    return None if path is None else path.parent / name / path.name


def _one_text(text, what: str) -> None:
    """``text`` is one non-blank input, or an InputError saying so."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{what}: give one non-blank input text", "text")


def _mark_gold(data, translations: Sequence[Translation]) -> None:
    """Give each output the gold links of its task (``data``: numbers, dates) so that pictures
    outline them; none where the generator cannot align the output (a wrong one)."""
    from attnkit.evaluation.alignment import mark_gold

    aligner = gold_aligner(data)
    if aligner is not None:
        mark_gold(aligner, [option for t in translations for option in t.nbest or [t]])
