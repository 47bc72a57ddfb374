"""Progress bars (tqdm) on the long commands: build's display and show's per-video bar."""

from __future__ import annotations

import io

from memtools.builder import TextProgress
from memtools.builder.progress import Progress


def _run(sink) -> None:
    progress = Progress(sink, video_count=2)
    for index, video in enumerate(("first", "second")):
        progress.video_index = index
        progress.start_video(video, index, None)
        progress.begin("extract", 4)
        progress.advance("extract", 2)
        progress.finish("extract")
    progress.close()


def test_build_progress_is_a_tqdm_bar_per_video_on_a_terminal():
    stream = io.StringIO()
    _run(TextProgress(stream, tty=True))
    text = stream.getvalue()
    finals = [chunk.rsplit("\r", 1)[-1] for chunk in text.split("\n") if chunk]
    assert len(finals) == 2  # one bar per video, each left on its own line
    assert finals[0].startswith("[1/2 first] extract done") and "|" + "#" * 20 + "|" in finals[0]
    assert finals[1].startswith("[2/2 second] extract done")


def test_build_progress_in_a_log_is_plain_lines():
    stream = io.StringIO()
    _run(TextProgress(stream, tty=False, interval=3600))
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and lines
    assert lines[0].startswith("[1/2 first] extract 0/4 | 0 model calls, 0 tokens | 00:00")
    assert lines[-1].startswith("[2/2 second] extract done")
    assert not any("extract 2/4" in line for line in lines)  # throttled: only stage changes within the interval
