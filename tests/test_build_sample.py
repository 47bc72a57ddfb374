"""The bundled sample: a regenerated video replays the recorded answers on any CPU; the quickstart works."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memtools.builder import BuildConfig, build_video
from memtools.embed import TestEmbedder
from memtools.perception import ReplayVLM, request_key
from memtools.perception.replay import speech_wer
from memtools.schema import VideoGraph
from memtools.speech.whisper import WhisperRecognizer
from memtools.store import Memory
from memtools.tools import MemoryTools

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RESPONSES = EXAMPLES / "sample" / "responses.jsonl"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NARRATION = _load(EXAMPLES / "sample" / "make_narration.py").NARRATION


class _KeyLog(ReplayVLM):
    def __init__(self, path):
        super().__init__(path)
        self.keys: list[str] = []

    async def _complete(self, request):
        self.keys.append(request_key(request))
        return await super()._complete(request)


@pytest.fixture(scope="module")
def sample_video(tmp_path_factory) -> Path:
    return _load(EXAMPLES / "make_sample_video.py").make_sample_video(tmp_path_factory.mktemp("video") / "sample.mp4")


def _spoken(start: float, end: float) -> list[tuple[float, str]]:
    """The narrator's script (what was synthesized, not what was recognised) between two seconds."""
    return [(t, text) for t, text in NARRATION if start <= t < end]


def test_a_regenerated_sample_video_reproduces_the_recorded_requests(tmp_path, sample_video):
    """The sample video is lossless and drawn without anti-aliasing, so the frames, their JPEG
    bytes and therefore the request keys come out the same wherever it is generated. The
    narrator is recognised on this CPU, whose numerics may give other words than the recording
    machine's: the key leaves the speech out, and nothing below expects recognised words
    verbatim (the script is compared by word error rate, the times with a tolerance)."""
    vlm = _KeyLog(RESPONSES)
    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        report = build_video(memory, vlm, sample_video, config=BuildConfig.default(), speech=WhisperRecognizer())
        tools = MemoryTools(memory)
        transcript = tools.get_transcript("sample", 80, 130)
        about = tools.get_relations("sample/macro_0002/utt_002", direction="out").render()
        labels = [s.label for s in tools.get_summary("sample").supers]
        ball, boxes = (tools.get_entity_timeline(name=n).render() for n in ("ball", "boxes"))
    recorded = {json.loads(line)["key"] for line in RESPONSES.read_text().splitlines() if line.strip()}
    assert set(vlm.keys) == recorded  # every request was recorded, and nothing recorded is stale
    assert report.counts["macro"] == 4 and len(labels) == 2
    # the narrator, recognised by faster-whisper tiny.en, in the warehouse episode (issue 12)
    said = [(u.t_start, u.t_end, u.text) for u in transcript.lines]
    assert "sample/macro_0002/utt_002" in [u.id for u in transcript.lines]
    wer, _, _ = speech_wer(" ".join(t for _, t in _spoken(80, 130)), " ".join(text for _, _, text in said))
    assert wer <= 0.35, said
    for second, sentence in _spoken(80, 130):  # each sentence is heard where it is spoken
        assert any(start - 1.5 <= second <= end for start, end, _ in said), (sentence, said)
    assert "-ABOUT-> sample/macro_0002/evt_002 hits the stack of boxes" in about
    assert {i.severity for i in report.issues} == {"repaired", "dropped"}  # the fenced answer, the ghost id
    # the ball and the boxes, with the times they appear and what they do (issue 8)
    assert "A red rubber ball" in ball and "[0:01:20-0:02:10]" in ball
    assert "-PERFORMS-> evt_002 [0:01:40-0:01:41] hits the stack of boxes" in ball
    assert "A stack of three brown cardboard boxes" in boxes
    assert "-PERFORMS-> evt_003 [0:01:40-0:01:44] falls over" in boxes


OPENCV_SIMD = "AVX512-SKX,AVX2,FP16,AVX,SSE4.2,SSE4.1,POPCNT,SSSE3"
_BUILD_AND_DUMP = """
import json, sys
from pathlib import Path
from memtools.builder import BuildConfig, build_video
from memtools.embed import TestEmbedder
from memtools.perception import ReplayVLM
from memtools.speech.whisper import WhisperRecognizer
from memtools.store import Memory

video, responses, folder = (Path(a) for a in sys.argv[1:4])
with Memory.create(folder / "memory", TestEmbedder(64)) as memory:
    build_video(memory, ReplayVLM(responses), video, config=BuildConfig.default(), speech=WhisperRecognizer())
    with memory.reading() as graph_store:
        graph = graph_store.video_graph("sample")
print(graph.model_dump_json())
"""


def _build_under(isa: str | None, video: Path, folder: Path) -> VideoGraph:
    """The sample built in a fresh process whose recogniser runs CTranslate2's ``isa`` kernels
    (None: the ones it picks for this CPU), as on a CPU with that instruction set."""
    env = {k: v for k, v in os.environ.items() if k not in ("CT2_FORCE_CPU_ISA", "OPENCV_CPU_DISABLE")}
    if isa is not None:
        env["CT2_FORCE_CPU_ISA"] = isa
    if isa == "GENERIC":  # OpenCV's resize, colour and JPEG code without its dispatched SIMD, as on an old CPU
        env["OPENCV_CPU_DISABLE"] = OPENCV_SIMD
    folder.mkdir()
    done = subprocess.run([sys.executable, "-c", _BUILD_AND_DUMP, str(video), str(RESPONSES), str(folder)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return VideoGraph.model_validate_json(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_sample_builds_the_same_memory_whatever_the_recognisers_numerics(tmp_path, sample_video):
    """GENERIC kernels recognise the narration with other words and times than AVX2 or AVX-512
    ("a yellow card rhymes" for "a yellow car drives"); the replayed memory is the same all the
    same: episodes, entities, events and edges; the utterances agree up to a word error rate.
    The GENERIC build also runs OpenCV without its dispatched SIMD: the frames' JPEG bytes, and
    so the request keys, do not depend on it (a key the recording lacks fails the build)."""
    generic = _build_under("GENERIC", sample_video, tmp_path / "generic")
    native = _build_under(None, sample_video, tmp_path / "native")

    def structure(g: VideoGraph):
        return ([(s.id, s.label, s.t_start, s.t_end) for s in g.supers],
                [(m.id, m.label, m.t_start, m.t_end, m.summary) for m in g.macros],
                [(e.id, e.name, e.entity_type, e.description) for e in g.entities],
                [(e.id, e.t_start, e.t_end, e.description) for e in g.events],
                [(o.id, o.text) for o in g.ocr],
                sorted((e.source, e.target, e.label) for e in g.edges),
                [(u.id, u.macro_id) for u in g.speech])

    assert structure(generic) == structure(native)
    assert len(native.macros) == 4 and len(native.speech) >= 5
    for a, b in zip(generic.speech, native.speech, strict=True):
        assert abs(a.t_start - b.t_start) <= 1.0 and abs(a.t_end - b.t_end) <= 1.0, (a, b)
    wer, _, _ = speech_wer(" ".join(u.text for u in native.speech), " ".join(u.text for u in generic.speech))
    assert wer <= 0.2
    script = " ".join(t for _, t in NARRATION)
    for g in (generic, native):
        assert speech_wer(script, " ".join(u.text for u in g.speech))[0] <= 0.35


@pytest.mark.slow
def test_the_quickstart_builds_and_explores_the_sample_and_leaves_the_checkout_clean(quickstart):
    done = quickstart.done  # run once per session (tests/conftest.py); tests/test_docs_run.py uses its memories
    assert done.returncode == 0, done.stderr
    assert quickstart.status_after == quickstart.status_before  # nothing tracked was overwritten, nothing new left
    out = done.stdout
    assert "Built 1 video(s)" in out and "2 super / 4 macro events" in out
    assert "deliberately malformed" in out  # the sample's repairs are explained, not alarming
    for scene in ("kitchen", "football", "Warehouse B", "night street"):
        assert scene.lower() in out.lower()
    assert "HOME 1 - 0 AWAY" in out  # the on-screen score, verbatim
    assert "evt_002 -CAUSES-> evt_003 (The impact of the ball knocks the boxes over.)" in out
    boxes = out.split('search_nodes --query "why did the boxes fall"')[1].split("$ memtools tool")[0]
    assert "[event] sample/macro_0002/" in boxes
    speech = out.split("what did the narrator say about the boxes?")[-1].split("get_transcript")[0]
    assert "sample/macro_0002/utt_" in speech and "boxes" in speech.lower()  # recognised words vary by CPU
    from memtools.speech.voice_weights import weights_path

    if weights_path() is not None:  # with the voice weights: speakers, and one narrator followed across two videos
        said = out.split("get_transcript --start-sec 0 --end-sec 140")[-1].split("$ memtools")[0]
        assert "] S1: " in said and "] S2: " in said
        person = out.split('get_entity_timeline --name "Second narrator"')[-1].split("$ memtools")[0]
        assert "'Second narrator': heard or seen in 2 video(s)" in person
        assert "1. sample [0:00:43-0:02:18]: voice S2 'Second narrator'" in person
        assert "2. sample-again [0:00:43-0:02:18]: voice S2 (lib/person_" in person and "linked by voice" in person
    days = out.split("get_event_chain")[-1]  # a question across days, on the bundled week of captions
    assert "on 3 day(s)" in days and "last thu_kitchen" in days and "recorded 2026-11-19T07:55:00+01:00" in days
    assert "Thursday 2026-11-19: 1 video recorded" in days
