"""A reranker for tests that answers what it is told: a list of scores, a function of the documents,
an exception, or (with ``release``) only once an event is set. It fails the way real ones do."""

from __future__ import annotations

import threading


class ScriptedReranker:
    def __init__(self, answer=None, error: Exception | None = None, release: threading.Event | None = None,
                 name: str = "scripted") -> None:
        self.answer, self.error, self.release, self.name = answer, error, release, name

    def rerank(self, query, documents):
        if self.release is not None:
            self.release.wait(30)
        if self.error is not None:
            raise self.error
        return self.answer(documents) if callable(self.answer) else self.answer
