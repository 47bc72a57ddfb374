"""``memtools build --follow``: a memory that grows while the video is recorded.

Chunk folders are the followed source in the end-to-end tests (chunks renamed into place, as a
segmenter or camera writes them; see ``live_support``); a growing raw-MJPEG file covers the
growing-file source. Perception is the scripted fake (``memtools.builder.testing``) behind a
backend module the test writes, as in ``test_build_resume``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path

import anyio
import cv2
import pytest
from mcp import StdioServerParameters

from build_helpers import dump_memory
from live_support import command, env, follow_args, setup, write_chunk
from mcp_support import BUSY, Client, mcp_command
from memtools.builder.config import BuildConfig
from memtools.builder.follow_source import CaptureSource, ChunkFolder, Grid, open_source
from memtools.builder.frame_tiers import StoredFrame, Tier, TierPolicy, plan, simulate
from memtools.builder.live import afollow
from memtools.builder.testing import scripted_vlm
from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.embed.images import TestImageEmbedder
from memtools.errors import ConfigError
from memtools.store import Memory
from memtools.store.integrity.checker import check
from memtools.tools import MemoryTools
from memtools.video import KeyframeConfig
from synthetic_video import scene, stamp

# --- the frame-age tiers (no video) -----------------------------------------------------------


def test_a_simulated_day_stays_under_the_cap_at_every_landing():
    cap_mb = 50
    history = simulate(24, TierPolicy.vam(cap_mb), every_sec=2.0, frame_bytes=60_000)
    assert len(history) == 144  # a landing every 10 minutes
    assert all(h.bytes <= cap_mb * 1_000_000 for h in history)
    uncapped = simulate(24, TierPolicy.vam(), every_sec=2.0, frame_bytes=60_000)
    assert uncapped[-1].bytes > 3 * cap_mb * 1_000_000  # the cap, not the stream, kept it small
    assert max(h.doublings for h in history) > 0 == max(h.doublings for h in uncapped)


def test_tiers_thin_by_age_keep_anchors_and_event_frames():
    frames = [StoredFrame(t=float(t), size=1000, side=768, macro_id=f"m{t // 600}") for t in range(0, 30 * 3600, 5)]
    now = 30 * 3600.0
    decided = plan(frames, now, TierPolicy.vam())
    kept = [frames[i] for i in decided.keep]
    assert kept[0].t == 0.0 and kept[-1].t == frames[-1].t  # earliest and latest always stay
    recent = [f for f in kept if now - f.t <= 3600]
    assert len(recent) == 720  # the last hour keeps every frame (5 s apart, gap 1 s)
    mid = [f.t for f in kept if 3600 < now - f.t <= 86400]
    assert all(b - a >= 20 - 1e-9 for a, b in zip(mid, mid[1:], strict=False))
    long_tier = [f for f in kept if now - f.t > 86400]
    assert {f.macro_id for f in long_tier} == {f.macro_id for f in frames if now - f.t > 86400}  # every event
    assert all(decided.shrink[i].name == "long" for i in decided.keep if now - frames[i].t > 86400 and i > 0)
    # thinning again later never wants back a frame it dropped
    later = plan(kept, now + 600, TierPolicy.vam())
    again = {kept[i].t for i in later.keep}
    assert again <= {f.t for f in kept}


# --- sources --------------------------------------------------------------------------------


def _mjpeg(first: int, last: int) -> bytes:
    out = b""
    for i in range(first, last):
        ok, buf = cv2.imencode(".jpg", stamp(scene(i // 25), i % 256), [cv2.IMWRITE_JPEG_QUALITY, 90])
        assert ok
        out += buf.tobytes()
    return out


def test_a_growing_file_is_read_to_its_end_as_it_grows(tmp_path):
    path = tmp_path / "recording.mjpeg"  # raw MJPEG: appendable, like MPEG-TS
    path.write_bytes(_mjpeg(0, 50))

    def grow() -> None:
        for k in range(1, 4):
            time.sleep(0.5)
            with path.open("ab") as handle:
                handle.write(_mjpeg(50 * k, 50 * (k + 1)))

    writer = threading.Thread(target=grow)
    writer.start()
    source = open_source(str(path), poll=0.1, idle_timeout=1.5)
    assert isinstance(source, CaptureSource)
    got = [item for item in source.read(0.0, Grid(0.5), threading.Event()) if item is not None]
    writer.join()
    assert [index for index, _ in got] == list(range(16))  # 200 frames at 25 fps: 8 s, every grid point once
    assert [f.t for _, f in got] == sorted(f.t for _, f in got)


def test_a_chunk_folder_is_one_stream_and_resumes_mid_chunk(tmp_path):
    folder = tmp_path / "chunks"
    folder.mkdir()
    for i in range(2):
        write_chunk(folder, i)
    (folder / ".segment_002.mp4").write_bytes(b"half written")  # hidden: ignored
    source = ChunkFolder(folder, poll=0.05, idle_timeout=0.3)
    times = [f.t for item in source.read(0.0, Grid(1.0), threading.Event()) if item for f in [item[1]]]
    assert len(times) == 40 and times[0] == pytest.approx(0.4) and times[-1] == pytest.approx(39.4)
    later = [item[0] for item in ChunkFolder(folder, poll=0.05, idle_timeout=0.3).read(25.0, Grid(1.0),
                                                                                         threading.Event()) if item]
    assert later == list(range(25, 40))


def test_a_missing_source_says_what_to_pass(tmp_path):
    with pytest.raises(ConfigError, match="growing video file|chunk files|stream URL"):
        open_source(str(tmp_path / "nope.ts"))


# --- the live build ---------------------------------------------------------------------------


def _ready(memory: Path, video_id: str) -> bool:
    """Whether the memory lists the video as ready (read as any reader would, beside the writer)."""
    from memtools.errors import MemtoolsError
    from memtools.store.catalog.manifest import read_manifest

    try:
        entry = read_manifest(memory).videos.get(video_id)
    except MemtoolsError:  # not created yet
        return False
    return entry is not None and entry.status == "ready"


@pytest.mark.slow
async def test_follow_lands_windows_while_an_mcp_client_reads(tmp_path):
    """The stream is paced by what the client sees, never by the clock: a chunk is written once the
    memory shows what the chunks before it let land (windows of 20 s, episodes of 10 s, and a chunk
    is read once a later one exists): 2 episodes before chunk 3, 4 before chunk 4, and all 10 at the
    end of the stream. The idle timeout that ends the stream is far longer than a loaded machine
    needs to answer, and every wait has a generous deadline."""
    config, chunks = setup(tmp_path)
    memory = tmp_path / "memory"
    for i in range(3):  # chunk 2 lets chunk 1 be read, which closes the first window
        write_chunk(chunks, i)
    with open(tmp_path / "follow.log", "wb") as log:
        proc = subprocess.Popen(command(follow_args(chunks, memory, config, "--idle-timeout", "30")),
                                env=env(tmp_path, FAKE_VLM_DELAY="0.05"), stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while not _ready(memory, "chunks"):
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "follow.log").read_text()
                time.sleep(0.1)
            seen: list[int] = []
            errors: list[str] = []
            cmd, args = mcp_command(memory)
            async with Client(StdioServerParameters(command=cmd, args=args)) as client:
                chunk = 3
                with anyio.fail_after(600):
                    while proc.poll() is None:
                        result = await client.call_tool("search_by_time", {"start_sec": 0, "end_sec": 10_000,
                                                                           "video_id": "chunks"})
                        if result.is_error:
                            errors.append(result.content[0].text)
                        else:
                            count = len(result.structured_content["matches"])
                            if not seen or seen[-1] != count:
                                seen.append(count)
                        if chunk <= 4 and seen and seen[-1] >= 2 * (chunk - 2):  # what chunk - 1 let land is in
                            write_chunk(chunks, chunk)
                            chunk += 1
                        await anyio.sleep(0.1)
                summary = await client.call_tool("get_summary", {"video_id": "chunks"})
                final = await client.call_tool("search_by_time", {"start_sec": 0, "end_sec": 10_000})
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    output = (tmp_path / "follow.log").read_text()
    assert proc.returncode == 0, output
    assert "end of stream" in output
    assert all(BUSY in e for e in errors), errors  # the only error a reader may meet
    # new episodes appeared without a restart: the first window's 2, then more (a window's episodes may
    # land one by one, so 3 can be seen between 2 and 4), never fewer
    assert seen[0] == 2 and len(seen) >= 3 and any(c >= 4 for c in seen) and seen == sorted(seen), seen
    assert len(final.structured_content["matches"]) == 10  # 100 s of stream, episodes of 10 s
    assert not summary.is_error and "chunks/super_" in summary.content[0].text
    with Memory.open(memory, TestEmbedder(64)) as opened:
        assert check(opened).ok


def _saved_keys(memory: Path) -> set[str]:
    calls = memory / "work" / "chunks" / "calls"
    return {json.loads(p.read_text())["key"] for p in calls.glob("*.json")}


@pytest.mark.slow
def test_kill_9_then_rerun_continues_to_the_memory_of_an_uninterrupted_build(tmp_path, monkeypatch):
    config, chunks = setup(tmp_path)
    for i in range(4):
        write_chunk(chunks, i)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FAKE_VLM_LOG", str(tmp_path / "reference.log"))
    assert main(follow_args(chunks, tmp_path / "reference", config, "--idle-timeout", "0.5")) == 0
    reference = (tmp_path / "reference.log").read_text().split()

    memory, first_log = tmp_path / "memory", tmp_path / "first.log"
    proc = subprocess.Popen(command(follow_args(chunks, memory, config, "--idle-timeout", "0.5")),
                            env=env(tmp_path, FAKE_VLM_LOG=str(first_log), FAKE_VLM_DELAY="0.2"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    landed = memory / "work" / "chunks" / "live" / "landed.json"
    deadline = time.monotonic() + 60
    while not (landed.exists() and json.loads(landed.read_text())["windows"] >= 2):  # two windows in the memory
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1].decode()
        time.sleep(0.02)
    time.sleep(0.3)  # and the third one in flight
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    saved = _saved_keys(memory)
    with Memory.open(memory, TestEmbedder(64)) as opened:  # what readers saw at the kill: a whole memory
        assert check(opened).ok
        assert 2 <= opened.manifest.videos["chunks"].counts["macro"] < 8

    monkeypatch.setenv("FAKE_VLM_LOG", str(tmp_path / "second.log"))
    assert main(follow_args(chunks, memory, config, "--idle-timeout", "0.5")) == 0
    second = (tmp_path / "second.log").read_text().split()
    assert not set(second) & saved, "a model call of a closed window was asked again"
    assert set(second) <= set(reference) and len(second) == len(set(second))  # nothing new, nothing twice
    assert dump_memory(memory) == dump_memory(tmp_path / "reference")
    names = sorted(p.name for p in (memory / "frames" / "chunks").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "reference" / "frames" / "chunks").iterdir())


@pytest.mark.slow
def test_ctrl_c_lands_what_was_seen_and_exits_0(tmp_path):
    config, chunks = setup(tmp_path)
    for i in range(3):
        write_chunk(chunks, i)  # with no end of stream, the newest chunk waits for a later one
    memory = tmp_path / "memory"
    proc = subprocess.Popen(command(follow_args(chunks, memory, config, "--idle-timeout", "0")),
                            env=env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    landed = memory / "work" / "chunks" / "live" / "landed.json"
    deadline = time.monotonic() + 60
    while not landed.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1].decode()
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert "(stopped)" in out.decode() and "landing what was seen" in err.decode()
    with Memory.open(memory, TestEmbedder(64)) as opened:
        assert check(opened).ok
        entry = opened.manifest.videos["chunks"]
        assert entry.status == "ready" and entry.duration == pytest.approx(39.9, abs=0.6)  # two chunks were read
        assert MemoryTools(opened).search_by_time(30, 39, "chunks").matches  # the open window landed too


# --- thinning keeps the memory whole ------------------------------------------------------------


@pytest.mark.slow
async def test_thinning_keeps_graph_table_and_files_consistent(tmp_path):
    config, chunks = setup(tmp_path)
    for i in range(3):
        write_chunk(chunks, i)
    tiers = TierPolicy(tiers=(Tier(name="recent", max_age_sec=20, min_gap_sec=1),
                              Tier(name="mid", max_age_sec=40, min_gap_sec=10, max_side=96, jpeg_quality=50),
                              Tier(name="long", max_age_sec=None, min_gap_sec=20, max_side=64, jpeg_quality=30)))
    build_config = BuildConfig.short().model_copy(update={"window_sec": 20, "frames_per_window": 8,
                                                          "frames_per_macro": 4, "min_episode_sec": 5,
                                                          "keyframes": KeyframeConfig.all_frames()})
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder()) as memory:
        report = await afollow(memory, scripted_vlm(episode_sec=10), str(chunks), config=build_config, tiers=tiers,
                               idle_timeout=0.3, poll=0.05)
        work = memory.work_dir("chunks") / "live"
        selected = sum(len(json.loads(p.read_text())) for p in work.glob("keyframes_*.json"))
        assert report.landings[-1].keyframes < selected  # older keyframes were thinned out
        result = check(memory)
        assert result.ok, result.render()
        tools = MemoryTools(memory)
        frames = tools.inspect_frames("chunks", 0, 60, max_frames=16).frames
        ids = [f.keyframe_id for f in frames]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        listed = {(path / f.path).name for f in frames}
        on_disk = {p.name for p in memory.frames_dir("chunks").iterdir()}
        assert listed == on_disk  # nothing dropped is left behind, nothing listed is missing
        assert any(".long." in name for name in on_disk) and any(".mid." in name for name in on_disk)
        assert memory.keyframes is not None and memory.keyframes.count("chunks") == len(on_disk)


@pytest.mark.parametrize(("extra", "message"), [
    (["--idle-timeout", "-1"], "--idle-timeout must be 0"),
    (["--keyframe-cap-mb", "0"], "--keyframe-cap-mb must be a positive"),
    (["--speech", "local"], "do not recognise speech yet"),
    (["clip.mp4"], "--follow builds one stream"),
])
def test_follow_refuses_bad_arguments_with_a_fix(tmp_path, capsys, extra, message):
    (tmp_path / "chunks").mkdir()
    args = ["build", "--follow", str(tmp_path / "chunks"), "--memory", str(tmp_path / "memory"), "--vlm",
            "python:memtools.builder.testing:scripted_vlm", "--embedder", "test:64", *extra]
    assert main(args) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "memory" / "work").exists()  # refused before anything was written


def test_a_stream_url_continues_the_memory_clock_across_reconnections(tmp_path):
    import functools
    import http.server

    (tmp_path / "cam.mjpeg").write_bytes(_mjpeg(0, 50))  # 2 s per connection, then the stream "drops"
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        source = open_source(f"http://127.0.0.1:{server.server_address[1]}/cam.mjpeg", poll=0.05)
        assert isinstance(source, CaptureSource)
        stop, got = threading.Event(), []
        for item in source.read(30.0, Grid(0.5), stop):  # a resumed build: the memory holds 30 s already
            if item is not None:
                got.append(item)
            if len(got) >= 10:
                stop.set()
    finally:
        server.shutdown()
    times = [f.t for _, f in got]
    assert times[0] >= 30.0 and times == sorted(times) and len(set(times)) == len(times)
    assert times[-1] > 32.5  # past one connection's 2 s: it reconnected and went on from there
    assert [i for i, _ in got] == sorted({i for i, _ in got})
