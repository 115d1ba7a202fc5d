"""``attnkit serve``: a JSON API over trained checkpoints and the explorer page that reads it.

:mod:`.app` builds the FastAPI app, :mod:`.server` runs it under uvicorn; requests are checked
against :mod:`.limits` (:mod:`.schemas`), answered by :mod:`.translate` and :mod:`.classify`,
and decoded in one worker thread that batches them (:mod:`.batching`). docs/SERVE.md describes
the API.
"""
