"""Speakers named by their sources: WebVTT voice spans, ``NAME:`` / ``[NAME]`` lines in SRT cues,
and a diarising transcription server (``diarized_json``, faked at the transport with respx)."""

from __future__ import annotations

import httpx
import numpy as np
import respx

from memtools.speech.openai import OpenAIRecognizer
from memtools.speech.subtitles import SubtitleRecognizer
from memtools.video.audio import SAMPLE_RATE, AudioChunk

VTT = """WEBVTT

00:00:01.000 --> 00:00:04.000
<v Roger Bingham>We are in New York City

00:00:05.000 --> 00:00:09.000
<v.loud Neil deGrasse Tyson>And with me is Neil</v>

00:00:10.000 --> 00:00:14.000
<v Roger Bingham>So, Neil?
<v Neil deGrasse Tyson>Yes, Roger.

00:00:15.000 --> 00:00:16.000
Nobody named here
"""

SRT = """1
00:00:01,000 --> 00:00:03,000
ANNA: Good morning.

2
00:00:04,000 --> 00:00:06,000
[Ben] Morning, Anna.

3
00:00:07,000 --> 00:00:08,000
[Music] and then a song

4
00:00:09,000 --> 00:00:10,000
- [Dr. Chen]: Next patient.
"""
WHOLE = AudioChunk(t_start=0.0, samples=np.empty(0, np.float32), span=float("inf"))


def _said(tmp_path, name: str, text: str) -> list[tuple[float, float, str, str | None]]:
    path = tmp_path / name
    path.write_text(text)
    return [(u.t_start, u.t_end, u.text, u.speaker) for u in SubtitleRecognizer(path).recognize(WHOLE)]


def test_webvtt_voice_spans_name_the_speaker(tmp_path):
    assert _said(tmp_path, "talk.vtt", VTT) == [
        (1.0, 4.0, "We are in New York City", "Roger Bingham"),
        (5.0, 9.0, "And with me is Neil", "Neil deGrasse Tyson"),
        (10.0, 12.0, "So, Neil?", "Roger Bingham"),  # a cue that changes voice: one utterance per voice
        (12.0, 14.0, "Yes, Roger.", "Neil deGrasse Tyson"),
        (15.0, 16.0, "Nobody named here", None)]


def test_srt_lines_name_the_speaker_with_a_colon_or_brackets_but_sound_notes_are_not_names(tmp_path):
    assert _said(tmp_path, "talk.srt", SRT) == [
        (1.0, 3.0, "Good morning.", "ANNA"), (4.0, 6.0, "Morning, Anna.", "Ben"),
        (7.0, 8.0, "[Music] and then a song", None), (9.0, 10.0, "Next patient.", "Dr. Chen")]


DIARIZED = {"task": "transcribe", "duration": 3.0, "text": "Hi Bob. Hi Alice.",
            "segments": [{"type": "transcript.text.segment", "id": "seg_0", "start": 0.1, "end": 1.2,
                          "text": " Hi Bob.", "speaker": "A"},
                         {"type": "transcript.text.segment", "id": "seg_1", "start": 1.4, "end": 2.8,
                          "text": " Hi Alice.", "speaker": "B"}],
            "usage": {"type": "duration", "seconds": 3}}


def test_a_diarising_server_is_asked_for_diarized_json_and_its_speakers_are_kept():
    router = respx.Router(base_url="http://asr.test/v1")
    route = router.post("/audio/transcriptions").mock(return_value=httpx.Response(200, json=DIARIZED))
    recognizer = OpenAIRecognizer("gpt-4o-transcribe-diarize", base_url="http://asr.test/v1", api_key="k",
                                  diarize=True, transport=httpx.MockTransport(router.handler))
    found = recognizer.recognize(AudioChunk(t_start=30.0, samples=np.zeros(3 * SAMPLE_RATE, np.float32)))
    assert [(u.t_start, u.t_end, u.text, u.speaker) for u in found] == [
        (30.1, 31.2, "Hi Bob.", "A"), (31.4, 32.8, "Hi Alice.", "B")]
    body = route.calls.last.request.content
    assert b'name="response_format"\r\n\r\ndiarized_json' in body
    assert b'name="chunking_strategy"\r\n\r\nauto' in body and b"timestamp_granularities" not in body
    assert recognizer.name == "openai:gpt-4o-transcribe-diarize:diarized"


def test_speakers_on_without_the_weights_fail_clearly_before_the_memory_is_touched(tmp_path, monkeypatch, capsys):
    from audio_video import tone, write_av_video
    from memtools.cli import main

    monkeypatch.setenv("MEMTOOLS_VOICE_WEIGHTS", str(tmp_path / "absent.pt"))
    video = write_av_video(tmp_path / "talk.mp4", 20.0, audio=tone(20.0, rate=16_000), rate=16_000)
    srt = tmp_path / "talk.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:03,000\nHello.\n")
    memory = tmp_path / "memory"
    code = main(["build", str(video), "--memory", str(memory), "--vlm", "python:memtools.builder.testing:scripted_vlm",
                 "--embedder", "test:64", "--preset", "short", "-q", "--subtitles", str(srt), "--speakers", "on"])
    assert code == 1 and "pip install --no-deps resemblyzer" in capsys.readouterr().err
    assert not memory.exists()
    # auto without the weights builds as before, without speakers
    assert main(["build", str(video), "--memory", str(memory), "--vlm", "python:memtools.builder.testing:scripted_vlm",
                 "--embedder", "test:64", "--preset", "short", "-q", "--subtitles", str(srt)]) == 0
    assert main(["repair", "--speakers", "--memory", str(memory)]) == 1
    assert "pip install --no-deps resemblyzer" in capsys.readouterr().err
