"""The ``activities`` and ``words`` tables of ``library.sqlite``: new activities placed in groups by meaning
(``memtools.store.library.meaning``), and the lemma vectors their labels need. Called inside the layer's
write transaction (``memtools.store.library.layer``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from memtools.store.library import meaning

Embed = Callable[[list[str]], Sequence[Any]]


def blob(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


GROUP_WINDOW = 20_000
"""A new activity is grouped against the most recent leaders at most (a write reads their vectors: bounded,
whatever the library's size); an older leader's meaning is still found by a question, activity by activity."""


def add(conn: sqlite3.Connection, new: Mapping[str, str], embed: Embed | None) -> None:
    """Store new activities (key -> label) in the order given, each in the group of the leader it matches
    surely (``meaning.group_of``) or leading a new one; the lemma vectors their labels need go to ``words``."""
    cores = list(dict.fromkeys(meaning.core(label) for label in new.values()))
    found: list[np.ndarray | None] = [meaning.unit(v) for v in embed(cores)] if embed else [None] * len(cores)
    core_vectors = dict(zip(cores, found, strict=True))
    words = sorted(meaning.words_of(list(new.values())))
    known_words = dict(zip(words, stored(conn, embed)(words), strict=True)) if embed else word_vectors(conn, words)
    dim = next((len(v) for v in core_vectors.values() if v is not None), 0)
    leaders = [(a, label, np.frombuffer(v, dtype=np.float32)) for a, label, v in conn.execute(
        "SELECT activity, label, vector FROM activities WHERE grp = activity AND vector IS NOT NULL "
        "ORDER BY rowid DESC LIMIT ?", (GROUP_WINDOW,))][::-1]
    leaders = [x for x in leaders if len(x[2]) == dim]
    known = StoredWords(conn, known_words)
    matrix = np.zeros((len(leaders) + len(new), dim), dtype=np.float32)  # the leaders' vectors, grown in place
    for i, (_, _, v) in enumerate(leaders):
        matrix[i] = v
    labels = [label for _, label, _ in leaders]
    rows = []
    for activity, label in new.items():
        vector = core_vectors[meaning.core(label)]
        group, similarity = activity, 1.0
        if vector is not None:
            joined, similarity = meaning.group_of(label, vector, labels, matrix[:len(labels)], known)
            if joined is None:
                matrix[len(labels)] = vector
                leaders.append((activity, label, vector))
                labels.append(label)
            else:
                group = leaders[joined][0]
        rows.append((activity, label, blob(vector), group, round(similarity, 4)))
    conn.executemany("INSERT OR REPLACE INTO activities VALUES (?,?,?,?,?)", rows)


def stored(conn: sqlite3.Connection, embed: Embed) -> Callable[[list[str]], list[np.ndarray]]:
    """``embed`` through the ``words`` table (short texts: lemmas and entity names): a text stored there is
    read, the others embedded once and stored; unit vectors. The library's linker compares entity names
    this way, so a write embeds only names it has never seen."""
    def run(texts: list[str]) -> list[np.ndarray]:
        unique = list(dict.fromkeys(texts))
        known = word_vectors(conn, unique)
        missing = [t for t in unique if t not in known]
        if missing:
            fresh = {t: meaning.unit(v) for t, v in zip(missing, embed(missing), strict=True)}
            conn.executemany("INSERT OR REPLACE INTO words VALUES (?, ?)", [(t, blob(v)) for t, v in fresh.items()])
            known.update(fresh)
        return [known[t] for t in texts]
    return run


class StoredWords(Mapping[str, np.ndarray]):
    """Lemma vectors: those given, and any other read from ``words`` when first asked for (the words of the
    few leaders a new activity is scored against, never the whole vocabulary)."""

    def __init__(self, conn: sqlite3.Connection, given: dict[str, np.ndarray]) -> None:
        self.conn, self.vectors, self.asked = conn, given, set(given)

    def __getitem__(self, word: str) -> np.ndarray:
        if word not in self.asked:
            self.asked.add(word)
            self.vectors.update(word_vectors(self.conn, [word]))
        return self.vectors[word]

    def __iter__(self) -> Iterator[str]:
        return iter(self.vectors)

    def __len__(self) -> int:
        return len(self.vectors)


def word_vectors(conn: sqlite3.Connection, words: Sequence[str], chunk: int = 900) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(words), chunk):
        part = list(words[start:start + chunk])
        marks = ", ".join("?" for _ in part)
        out.update((w, np.frombuffer(v, dtype=np.float32)) for w, v in
                   conn.execute(f"SELECT word, vector FROM words WHERE word IN ({marks}) AND vector IS NOT NULL", part))
    return out
