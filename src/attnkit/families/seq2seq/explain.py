"""What a seq2seq model's output rests on, one input at a time, for the API object
(:class:`~attnkit.families.seq2seq.model.Seq2SeqModel`, which checks the arguments first):

* :func:`explain_output`: the attention paid while writing one output beside the gradient
  saliency of the same output (captum), and how far the two agree (``Seq2SeqModel.explain``);
* :func:`rollout_maps`: a Transformer's attention rollout and flow (Abnar & Zuidema 2020), its
  one input forced along its own greedy output (``Seq2SeqModel.rollout``).

Shapes: T output tokens ("</s>" included when the output ended), S source tokens ("</s>"
included), L decoder layers.
"""

from __future__ import annotations

from attnkit.families.seq2seq.translator import Translation, Translator


def explain_output(
    translator: Translator, text: str, output: str, method: str, attends: bool
) -> tuple[Translation, Translation, dict]:
    """``text`` forced along ``output``: (the forced translation, its attention ``weights``
    (T, S); the same with the gradient saliency of every output token by ``method`` as its
    ``weights``; and, for a model that ``attends``, the agreement of the two maps:
    ``argmax_agreement`` and ``rank_correlation``)."""
    from attnkit.evaluation.agreement import argmax_agreement, rank_correlation
    from attnkit.explain.no_attention import saliency_translations

    (forced,) = translator.teacher_forced([text], [output])
    (salient,) = saliency_translations(translator, [forced], method)
    scores = {}
    if attends:
        pair = [(forced.weights, salient.weights)]
        scores = {
            "argmax_agreement": argmax_agreement(pair),
            "rank_correlation": rank_correlation(pair),
        }
    return forced, salient, scores


def rollout_maps(translator: Translator, text: str) -> dict:
    """A Transformer's maps of ``text`` forced along its own greedy output, every dropout off:
    {"source_tokens", "output_tokens", and arrays "attention", "rollout", "flow" ((T, S): each
    output step over the source), "encoder_rollout", "encoder_flow" ((S, S): each top encoder
    position over the source), "cross_by_layer" ((L, T, S): each decoder layer's
    cross-attention, heads averaged)}."""
    from attnkit.evaluation.faithfulness_seq2seq import Seq2SeqSubject, plain
    from attnkit.explain.rollout import transformer_maps

    with plain(translator.model):
        subject = Seq2SeqSubject(translator, text)
        maps = transformer_maps(translator.model, subject.src, subject.tgt_in)
    return {
        "source_tokens": subject.positions,
        "output_tokens": subject.units,
        **{k: v.numpy() for k, v in maps.items() if not k.endswith("_attention")},
    }
