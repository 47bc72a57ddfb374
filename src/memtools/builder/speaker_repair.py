"""``memtools repair --speakers``: who spoke, added to videos built without it, losing nothing.

    lines = add_speakers(memory, VoiceEncoder())             # every ready video with unlabelled speech
    lines = add_speakers(memory, encoder, video_ids=["talk"])

Each video is read back whole from the graph; its utterances (when none names a speaker) are cut from
the video's source file (the path the build recorded), embedded and clustered exactly as a
build with ``--speakers`` does (``memtools.builder.speakers``); the video is then written again
through the store's ordinary atomic write (the same nodes, edges, keyframes and vectors, with
the Speech nodes' ``speaker`` filled), and its voices saved (``memtools.store.tables.voices``). A video
whose source file is gone, or without speech, is left as it is and said so; a killed repair
leaves the video as it was or as repaired, like any write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memtools.builder.repair_videos import Lines, stored_videos
from memtools.builder.speakers import Embedder, embed_and_cluster
from memtools.speech.base import Utterance
from memtools.store import Memory
from memtools.store.tables.voices import save_voices


def add_speakers(memory: Memory, encoder: Embedder, *, video_ids: Sequence[str] | None = None,
                 progress: Callable[[str], None] | None = None) -> list[str]:
    """Label the speakers of each video's utterances that have none; one line per video says what happened."""
    say = Lines(progress)
    for vid, stored in stored_videos(memory, video_ids, say):
        if not stored.speech:
            say(f"{vid}: no speech; nothing to label")
            continue
        if any(s.speaker for s in stored.speech):
            say(f"{vid}: its speech already names speakers; left as it is")
            continue
        source = Path(stored.video.source_path)
        if not stored.video.source_path or not source.is_file():
            say(f"{vid}: its source file {str(source)!r} is gone; speakers need the audio (rebuild it from the "
                "file with --speakers)")
            continue
        said = [Utterance(t_start=s.t_start, t_end=s.t_end, text=s.text, speaker=s.speaker) for s in stored.speech]
        labelled, voices = embed_and_cluster(encoder, source, said)
        speech = [s.model_copy(update={"speaker": u.speaker}) for s, u in zip(stored.speech, labelled, strict=True)]
        save_voices(memory.path, vid, voices)  # first: the write's library layer reads them (people)
        memory.write_videos([stored.model_copy(update={"speech": speech})])
        named = sum(1 for s, u in zip(stored.speech, labelled, strict=True) if u.speaker and not s.speaker)
        say(f"{vid}: {named} utterance(s) labelled with {len(voices)} speaker(s)")
    return say.lines
