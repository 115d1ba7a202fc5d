"""One input that shows what a model of a generated task does, for a page to open with:
``siebenundneunzig`` for a German number model (the units before the tens: the attention jumps
back), a written date for a date model, a request with a never-seen name for a copying model,
a caption in its source language for a Multi30k translator. None for another task of files
(the page then waits for the user's own)."""

from __future__ import annotations

from num2words import num2words

#: the number a number model opens with: German writes its units first, so the map crosses
SHOWN_NUMBER = 97
#: copyrare's request with a name and a number never seen in training (the README's)
COPY_REQUEST = "send 48213 dollars to bokarime"
#: a Multi30k-like caption in each of its languages, in none of its splits
CAPTIONS = {
    "de": "Eine Frau liest ein Buch im Park.",
    "en": "A woman is reading a book in the park.",
    "fr": "Une femme lit un livre dans le parc.",
}


def sample_input(data_cfg) -> str | None:
    """An input of ``data_cfg``'s task the model reads, or None where the task reads files."""
    task = getattr(data_cfg, "task", None)
    if task == "numbers":
        languages = list(data_cfg.languages)
        lang = "de" if "de" in languages else languages[0]
        n = min(SHOWN_NUMBER, data_cfg.max_number)
        if data_cfg.direction == "digits2words":
            return f"{lang}: {n}"
        return num2words(n, lang=lang)
    if task == "dates":
        from attnkit.data.tasks import dates

        return dates.sample(seed=0, n=1)[0].source
    if task == "copyrare":
        return COPY_REQUEST
    if task == "multi30k":
        return CAPTIONS.get(data_cfg.src_lang)
    return None
