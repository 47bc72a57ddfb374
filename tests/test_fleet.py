"""Fleet builds on a real local Ray runtime (two CPUs, one runtime for the module): the
result equals the in-process build, a worker killed mid-video is retried without asking the
model again, and the endpoint limit holds at a fake OpenAI-compatible server."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from build_helpers import dump_memory, scenes_video
from memtools.builder import BuildConfig, build_videos
from memtools.builder.settings import BuildSettings, vlm_from_settings
from memtools.builder.testing import ScriptedPerception
from memtools.embed import TestEmbedder
from memtools.fleet import FleetOptions, build_fleet
from memtools.fleet.testing import ScriptedEndpoint
from memtools.perception import FunctionVLM, PerceptionRequest, request_key
from memtools.store import Memory

ray = pytest.importorskip("ray")

# the module's runtime starts after the reference build loaded lance, which warns at Ray's fork
# (its daemons exec at once; a fleet's own start leaves that warning out: tests/test_fleet_start.py)
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")]

CONFIG = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 8,
                                                "frames_per_macro": 3, "concurrency": 4})
EPISODE = 20.0


@pytest.fixture(scope="module")
def ray_runtime():
    # the endpoint-limit test talks to its own server on 127.0.0.1 through the real HTTP backend
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace="memtools-tests",
             runtime_env={"env_vars": {"MEMTOOLS_ALLOW_MODEL_REQUESTS": "1"}})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fleet-videos")
    return [scenes_video(folder / f"clip{i}.mp4", seconds=40 + 20 * i, scene_sec=10 + 5 * i) for i in range(3)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory, videos):
    """The in-process build of the same videos: its dump and every request it made."""
    path = tmp_path_factory.mktemp("reference") / "memory"
    vlm = FunctionVLM(ScriptedPerception(episode_sec=EPISODE))
    with Memory.create(path, TestEmbedder(64)) as memory:
        build_videos(memory, vlm, videos, config=CONFIG)
    return dump_memory(path), vlm.requests


def _fleet(path, make_vlm, videos, **options):
    with Memory.create(path, TestEmbedder(64)) as memory:
        return build_fleet(memory, make_vlm, videos, config=CONFIG, options=FleetOptions(**options))


def test_a_ray_fleet_build_equals_the_in_process_build(ray_runtime, tmp_path, videos, reference):
    summary = _fleet(tmp_path / "memory", ScriptedEndpoint(episode_sec=EPISODE), videos, ray=True, task_cpus=0.5)

    assert not summary.failed
    assert sorted(v.video_id for v in summary.videos) == ["clip0", "clip1", "clip2"]
    assert dump_memory(tmp_path / "memory") == reference[0]
    assert summary.usage.calls == len(reference[1]) and summary.tokens > 0

    again = _fleet(tmp_path / "memory", ScriptedEndpoint(episode_sec=EPISODE), videos, ray=True)
    assert [v.skipped for v in again.videos] == [True, True, True]  # unchanged: no task, no model call
    assert again.usage.calls == 0


def test_the_in_process_fleet_build_is_the_same_build(tmp_path, videos, reference):
    summary = _fleet(tmp_path / "memory", ScriptedEndpoint(episode_sec=EPISODE), videos, videos_in_flight=3)
    assert not summary.failed and summary.peak_requests <= 16
    assert dump_memory(tmp_path / "memory") == reference[0]


def test_a_worker_killed_mid_video_is_retried_and_asks_the_model_nothing_twice(ray_runtime, tmp_path, videos,
                                                                               reference):
    log, marker = tmp_path / "calls.jsonl", tmp_path / "died"
    endpoint = ScriptedEndpoint(episode_sec=EPISODE, log=str(log), die_at="aggregate", die_marker=str(marker))
    summary = _fleet(tmp_path / "memory", endpoint, videos, ray=True, task_cpus=0.5, max_retries=2)

    assert marker.exists()  # a worker process died after its video's segments and extractions were answered
    assert not summary.failed
    assert dump_memory(tmp_path / "memory") == reference[0]
    answered = [json.loads(line) for line in log.read_text().splitlines()]
    # exactly the calls of an uninterrupted build, each once: the retry reused every checkpointed answer
    assert Counter(a["key"] for a in answered) == Counter(request_key(r) for r in reference[1])
    assert int(marker.read_text()) in {a["pid"] for a in answered}  # it had answered calls before it died


class _FakeOpenAI(BaseHTTPRequestHandler):
    """``/v1/chat/completions`` answering like ScriptedPerception after a delay, counting requests in flight."""

    lock = threading.Lock()
    in_flight = peak = served = 0

    def do_POST(self):  # noqa: N802 - http.server's name
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.peak = max(cls.peak, cls.in_flight)
        try:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            system = next((m["content"] for m in body["messages"] if m["role"] == "system"), None)
            user = body["messages"][-1]["content"]
            prompt = user if isinstance(user, str) else "\n".join(p["text"] for p in user if p["type"] == "text")
            time.sleep(0.15)
            text = ScriptedPerception(episode_sec=EPISODE)(PerceptionRequest(system=system, prompt=prompt))
            payload = json.dumps({"id": "c", "object": "chat.completion", "model": body["model"],
                                  "choices": [{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": text}}],
                                  "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
        finally:
            with cls.lock:
                cls.in_flight -= 1
                cls.served += 1
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def fake_openai():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_endpoint_limit_holds_across_workers(ray_runtime, tmp_path, videos, reference, fake_openai):
    settings = BuildSettings(vlm="openai:fake-vl", base_url=fake_openai, api_key_env="MEMTOOLS_NO_KEY", config=CONFIG)
    make_vlm = functools.partial(vlm_from_settings, settings)
    # three videos at once with 4 calls each in flight would make 12 requests; the limit is 2
    summary = _fleet(tmp_path / "memory", make_vlm, videos, ray=True, task_cpus=0.5, endpoint_limit=2)

    assert not summary.failed
    assert _FakeOpenAI.peak == 2 and summary.peak_requests == 2
    assert _FakeOpenAI.served == len(reference[1])
    assert summary.tokens == 120 * len(reference[1])  # the fleet's token count comes from the usage of every call
    assert dump_memory(tmp_path / "memory") == reference[0]


def test_the_cli_builds_a_list_in_process_and_on_ray(ray_runtime, tmp_path, videos, capsys):
    from memtools.cli import main

    listing = tmp_path / "videos.txt"
    listing.write_text("# the library\n" + "\n".join(str(v) for v in videos[:2]) + "\n", encoding="utf-8")
    common = ["--vlm", "python:memtools.builder.testing:scripted_vlm", "--preset", "short", "--embedder", "test:64"]

    assert main(["build", "--from-list", str(listing), "--memory", str(tmp_path / "a"), *common]) == 0
    out, err = capsys.readouterr()
    assert "Built 2 video(s)" in out and "fleet: 2/2 videos done" in err
    assert main(["build", "--ray", str(videos[2]), "--memory", str(tmp_path / "a"), "--from-list", str(listing),
                 "--task-cpus", "0.5", *common]) == 0
    out, err = capsys.readouterr()
    assert "already built and unchanged" in out and "fleet: 3/3 videos done (2 unchanged)" in err
    with Memory.open(tmp_path / "a", TestEmbedder(64)) as memory:
        assert {v: e.status for v, e in memory.manifest.videos.items()} == dict.fromkeys(
            ["clip0", "clip1", "clip2"], "ready")

    listing.write_text(f"{tmp_path / 'nowhere.mp4'}\n", encoding="utf-8")
    assert main(["build", "--from-list", str(listing), "--memory", str(tmp_path / "a"), *common]) != 0
    assert "not found" in capsys.readouterr().err


def test_a_video_that_fails_is_reported_and_the_others_are_built(tmp_path, videos):
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00" * 4096)  # not a video: the worker's probe fails
    summary = _fleet(tmp_path / "memory", ScriptedEndpoint(episode_sec=EPISODE), [videos[0], broken])

    assert list(summary.failed) == ["broken"] and "VideoError" in summary.failed["broken"]
    assert "FAILED: 1 video(s)" in summary.render("memory")
    with Memory.open(tmp_path / "memory", TestEmbedder(64)) as memory:
        assert {v: e.status for v, e in memory.manifest.videos.items()} == {"clip0": "ready", "broken": "failed"}
