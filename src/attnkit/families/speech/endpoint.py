"""``POST /v1/transcribe``: a speech model's spelling of a number it hears, synthesised from
``language`` and ``number`` (eSpeak NG, a held-out voice) or uploaded as a ``wav`` (base64), with
the audio, its log-mel features and each output's weights over the frames: what
:meth:`attnkit.families.speech.model.Transcript.to_dict` gives in Python.

An upload is read by the bounded WAV reader (:func:`attnkit.data.audio.wav_from_bytes`: size,
sample rate, channels, duration, NaN and silence checked, one line each), as the request is
checked; what it refuses is one 422 naming ``wav``.
"""

# no "from __future__ import annotations": FastAPI reads the route's request model (built
# from the limits, local to add_route) from the handler's annotation at runtime

import base64
import binascii
from dataclasses import dataclass

from attnkit.data.audio import Audio, wav_from_bytes
from attnkit.data.tasks.speech import Item
from attnkit.errors import DataError, InputError, RequestError
from attnkit.families.serving import Endpoint, Routes, ServedModel, one_at_a_time
from attnkit.families.speech.model import spoken
from attnkit.families.speech.schemas import TranscribeResponse, request_model


@dataclass(frozen=True)
class SpeechKey:
    model: str


@dataclass(frozen=True)
class SpeechJob:
    """What to hear: a number to synthesise, or the audio uploaded (read and checked)."""

    audio: Item | Audio


def check_request(model: ServedModel, request) -> tuple[SpeechKey, SpeechJob]:
    """The batch key and job of a request: exactly one of ``wav`` or ``language`` and
    ``number``; an upload read by the bounded reader (an InputError naming ``wav``)."""
    if request.wav is not None:
        if request.language is not None or request.number is not None:
            raise RequestError(422, "wav", "wav: give a WAV or a language and number, not both")
        try:
            data = base64.b64decode(request.wav, validate=True)
        except (binascii.Error, ValueError):
            raise InputError("wav: not base64 (give the WAV file's bytes, base64)", "wav") from None
        try:
            return SpeechKey(model.name), SpeechJob(wav_from_bytes(data, "wav"))
        except DataError as exc:
            raise InputError(str(exc), "wav") from None
    if request.language is None or request.number is None:
        raise RequestError(422, "number", "number: give language and number, or a wav")
    return SpeechKey(model.name), SpeechJob(spoken(request.language, request.number))


def run_batch(model: ServedModel, key: SpeechKey, jobs: list[SpeechJob]) -> list:
    """One answer (a dict, or the exception it raised) per job, one at a time."""
    return one_at_a_time(lambda job: _answer(model, job), jobs)


def _answer(model: ServedModel, job: SpeechJob) -> dict:
    heard = model.loaded.transcribe(job.audio)
    said = job.audio.text if isinstance(job.audio, Item) else None
    return {"model": model.name, **heard.to_dict(), "spoken": said}


def add_route(app, routes: Routes) -> None:
    """``POST /v1/transcribe``."""
    from fastapi.responses import JSONResponse

    TranscribeRequest = request_model(routes.limits)

    @app.post("/v1/transcribe", response_model=TranscribeResponse, responses=routes.errors)
    async def transcribe(request: TranscribeRequest):  # type: ignore[valid-type]
        model = routes.pick(request.model, "speech")
        key, job = check_request(model, request)
        return JSONResponse(await routes.submit(key, job, 1))


def info(loaded) -> dict:
    """What ``GET /v1/models`` says of a speech model."""
    cfg = loaded.config
    ctc = cfg.model.kind == "ctc"
    return {
        "task": "spoken numbers",
        "attention": "none (CTC)" if ctc else f"{cfg.model.attention} (listen, attend and spell)",
        "has_attention": not ctc,
        "layers": None,
        "heads": None,
        "languages": list(cfg.data.languages),
        "sample_rate": cfg.data.mel.sample_rate,
        "has_gold": True,  # a synthesised number's spoken words
        "explain": False,
    }


#: the number the explorer opens with (German says it units first, as the text view's 97)
SHOWN_NUMBER = 97


def example(loaded) -> dict:
    """``{"number": "97", "language": ...}``: a number the model was trained on (at most its
    ``max_number``), in its first language, synthesised when the explorer opens."""
    data = loaded.config.data
    return {"number": str(min(SHOWN_NUMBER, data.max_number)), "language": data.languages[0]}


ENDPOINT = Endpoint("/v1/transcribe", add_route, {SpeechKey: run_batch}, info, example=example)
