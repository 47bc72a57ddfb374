"""Building a video again is all-or-nothing in its keyframe files too, under kill -9 anywhere.

A memory holds video "clip" built from one recording (v1); it is built again from another
(v2: other scenes, another length, so other keyframes, some under the same file names). The
rebuild is killed at every named point of its write (``MEMTOOLS_FAULT_POINT``), the points
around the keyframe folder swap included, and at a few twice (again while the next writer
recovers). After the next writer recovered the memory, ``check`` must be clean and every part
of the video (graph nodes, graph keyframes, lance rows, manifest counts and the keyframe files
byte for byte) must be the old version or the new one, all the same; the files must be exactly
the ones the graph lists, each decoding. Building again then gives the new version. A delete
killed after its commit leaves the video gone from every part, its frames included.

A rebuild killed before its write (the template of the other cases: its perception is
checkpointed and its keyframes staged, so the killed builds only write) and one whose model
fails mid-perception leave the old version whole, and ready.

Each engine runs in its own processes (kuzu and ladybug cannot load in one; ``frames_driver.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import frames_driver
import pytest
from fault_helpers import EMBEDDER, mem, run_python, template  # noqa: F401 - fixtures

DRIVER = Path(__file__).with_name("frames_driver.py")
SRC = Path(__file__).resolve().parents[2] / "src"

POINTS = ["journal-written", "frames-staged", "nodes-deleted", "nodes-written", "entities-written", "graph-begun",
          "graph-deleted", "graph-inserted", "graph-committed", "frames-aside", "frames-swapped", "indexed",
          "manifest-written"]
TWICE = [("graph-committed", "frames-aside"), ("frames-aside", "recovered"), ("frames-swapped", "recovered"),
         ("nodes-written", "frames-staged")]
PARTS = ("graph", "rows", "manifest", "frames")


def _env(fault: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MEMTOOLS_FAULT_POINT"}
    env.update({"PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    return {**env, "MEMTOOLS_FAULT_POINT": fault} if fault else env


def _driver(*args: object, fault: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DRIVER), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=_env(fault))


def _ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done


def _killed(done: subprocess.CompletedProcess, where: str) -> None:
    assert done.returncode == -9, f"not killed at {where}: {done.stdout[-500:]} {done.stderr[-1500:]}"


ABSENT = {"graph": {"ids": [], "keyframes": []}, "rows": {"nodes": [], "keyframes": []}, "manifest": None, "frames": {}}


def _version(state: dict, old: dict, new: dict) -> str | None:
    """"old", "new" or "absent" when every part of the video is that version, else None."""
    for name, version in (("old", old), ("new", new), ("absent", ABSENT)):
        if all(state.get(part) == version[part] for part in PARTS):
            return name
    return None


def _problems(state: dict, old: dict, new: dict, *, want: str | None = None) -> list[str]:
    """What is wrong with a recovered memory (empty: whole in one version, ``want`` if given)."""
    if "error" in state:
        return [state["error"]]
    found = []
    version = _version(state, old, new)
    if version is None:
        torn = {part: ("old" if state[part] == old[part] else "new" if state[part] == new[part] else
                       "absent" if state[part] == ABSENT[part] else "neither")
                for part in PARTS}
        found.append(f"the parts are of different versions: {torn}")
    elif want is not None and version != want:
        found.append(f"it holds the {version} version, not the {want} one")
    listed = set(state["graph"]["keyframes"])
    if set(state["frames"]) != listed:
        found.append(f"frame files {sorted(set(state['frames']) ^ listed)} are not exactly the graph's keyframes")
    if state["undecodable"]:
        found.append(f"undecodable frames {state['undecodable']}")
    if state["check"] != 0 or state["aside_left"]:
        found.append(f"check: {state['report'][-800:]} (aside folder left: {state['aside_left']})")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["kuzu", "ladybug"])
def test_a_rebuild_killed_anywhere_leaves_the_old_or_the_new_video_whole(engine, tmp_path):
    if engine == "ladybug" and importlib.util.find_spec("ladybug") is None:  # never imported here: it
        pytest.skip("ladybug is not installed")  # cannot share this process with kuzu
    _ok(_driver("videos", tmp_path))
    v1, v2 = tmp_path / "v1.mp4", tmp_path / "v2.mp4"
    base, whole = tmp_path / "base", tmp_path / "whole"
    _ok(_driver("build", base, v1, engine))
    shutil.copytree(base, whole)
    _ok(_driver("build", whole, v2, engine))
    old, new = (json.loads(_ok(_driver("describe", m)).stdout) for m in (base, whole))
    assert not _problems(old, old, new, want="old") and not _problems(new, old, new, want="new")
    assert set(old["frames"]) & set(new["frames"]) and old["frames"] != new["frames"]  # a name in both, other bytes

    # killed before its write: perception checkpointed, keyframes staged, the memory untouched
    staged = tmp_path / "staged"
    shutil.copytree(base, staged)
    _killed(_driver("build", staged, v2, engine, fault="write-start"), "write-start")
    cases = [{"memory": str(staged), "video": str(v2), "point": "write-start", "want": "old"}]
    for point in POINTS:
        cases.append({"memory": str(tmp_path / point), "video": str(v2), "point": point})
    for point, then in TWICE:
        cases.append({"memory": str(tmp_path / f"{point}-{then}"), "video": str(v2), "point": point, "then": then})
    for point in ("graph-committed", "frames-aside"):  # a delete, killed after its commit
        cases.append({"memory": str(tmp_path / f"delete-{point}"), "video": str(v2), "point": point,
                      "delete": True, "want": "absent"})

    def kill(case: dict) -> str | None:
        if case["point"] == "write-start":
            return None
        if "delete" in case:
            shutil.copytree(base, case["memory"])
            done = _driver("delete", case["memory"], fault=case["point"])
            return None if done.returncode == -9 else f"delete at {case['point']}: not killed: {done.stderr[-800:]}"
        shutil.copytree(staged, case["memory"])  # the killed builds reuse the staged perception: only the write runs
        done = _driver("build", case["memory"], v2, fault=case["point"])
        if done.returncode == -9 and "then" in case:
            done = _driver("build", case["memory"], v2, fault=case["then"])
        return None if done.returncode == -9 else f"{case['point']}: not killed: {done.stderr[-800:]}"

    with ThreadPoolExecutor(2) as pool:
        unreached = [u for u in pool.map(kill, cases) if u]
    assert not unreached, unreached

    plan, results = tmp_path / "plan.json", tmp_path / "results.json"
    plan.write_text(json.dumps(cases))
    _ok(_driver("recover", plan, results, timeout=600))
    failures = []
    seen = set()
    for r in json.loads(results.read_text()):
        where = ("a delete " if "delete" in r else "") + f"killed at {r['point']}" + (
            f", then at {r['then']}" if "then" in r else "")
        if problems := _problems(r["halfway"], old, new, want=r.get("want")):
            failures.append(f"{where}, after the next writer recovered it: {problems}")
        else:
            seen.add(_version(r["halfway"], old, new))
        if problems := _problems(r["after"], old, new, want="new"):
            failures.append(f"{where}, built again: {problems}")
    assert not failures, f"{len(failures)} of {len(cases)} kill points:\n" + "\n".join(failures)
    assert seen == {"old", "new", "absent"}  # the kill points fall on both sides of the commit


def test_a_rebuild_whose_model_fails_leaves_the_old_video_whole(tmp_path):
    from memtools.builder import build_video
    from memtools.builder.testing import ScriptedPerception
    from memtools.errors import PerceptionError
    from memtools.perception import FunctionVLM

    frames_driver.videos(tmp_path)
    memory = str(tmp_path / "memory")
    frames_driver.build(memory, str(tmp_path / "v1.mp4"), "kuzu")
    old = frames_driver.describe(memory)
    script = ScriptedPerception(episode_sec=10)

    def failing(request):
        if len(calls) >= 3:
            raise PerceptionError("the model endpoint went away")
        calls.append(request)
        return script(request)

    calls: list = []
    with frames_driver._open(memory) as mem, pytest.raises(PerceptionError):
        build_video(mem, FunctionVLM(failing), tmp_path / "v2.mp4", video_id=frames_driver.VIDEO,
                    config=frames_driver.config())
    assert (Path(memory) / "work" / "clip" / "staged" / "frames" / "clip").is_dir()  # the new keyframes, staged
    failed = frames_driver.describe(memory)
    assert failed["status"] == "ready"  # the old version stays searchable; the build's error said why
    assert not _problems(failed, old, old, want="old")


async def test_following_a_stream_into_an_existing_video_replaces_it_whole_at_the_first_landing(tmp_path):
    from live_support import write_chunk
    from memtools.builder.live import afollow
    from memtools.builder.testing import scripted_vlm
    from memtools.errors import PerceptionError
    from memtools.perception import FunctionVLM

    frames_driver.videos(tmp_path)
    memory = str(tmp_path / "memory")
    frames_driver.build(memory, str(tmp_path / "v1.mp4"), "kuzu")
    old = frames_driver.describe(memory)
    chunks = tmp_path / "chunks"
    chunks.mkdir()
    for i in range(2):
        write_chunk(chunks, i)
    config = frames_driver.config().model_copy(update={"window_sec": 20.0, "min_episode_sec": 5})

    def down(request):
        raise PerceptionError("the model endpoint went away")

    with frames_driver._open(memory) as mem, pytest.raises(PerceptionError):
        await afollow(mem, FunctionVLM(down), str(chunks), video_id=frames_driver.VIDEO, config=config,
                      idle_timeout=0.3, poll=0.05)
    failed = frames_driver.describe(memory)
    assert failed["status"] == "ready" and not _problems(failed, old, old, want="old")

    with frames_driver._open(memory) as mem:
        report = await afollow(mem, scripted_vlm(episode_sec=10), str(chunks), video_id=frames_driver.VIDEO,
                               config=config, idle_timeout=0.3, poll=0.05)
    assert report.landings
    followed = frames_driver.describe(memory)
    assert not _problems(followed, followed, followed)  # whole: files exactly the graph's keyframes, check clean
    assert followed["graph"] != old["graph"] and followed["frames"] != old["frames"]


def _frames(memory: Path, video: str) -> dict[str, bytes]:
    folder = memory / "frames" / video
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.is_dir() else {}


@pytest.mark.parametrize("point", ["graph-inserted", "frames-aside"])
def test_a_killed_memdreamer_reimport_leaves_the_old_or_the_new_frames(point, tmp_path, monkeypatch):
    import math

    from memdreamer_release import LV, write_jpeg, write_lecture
    from memtools.embed import TestEmbedder
    from memtools.memdreamer import import_memdreamer
    from memtools.store import Memory
    from memtools.store.integrity.checker import check

    release = tmp_path / "release"
    write_lecture(release)
    old_memory, new_memory, memory = tmp_path / "old", tmp_path / "new", tmp_path / "memory"
    with Memory.create(old_memory, TestEmbedder(64)) as mem:
        import_memdreamer(mem, release)
    for shade, image in enumerate(sorted(release.rglob("*.jpg"))):  # the new version: other pictures
        write_jpeg(image, 200 - 40 * shade)
    shutil.copytree(old_memory, new_memory)
    shutil.copytree(old_memory, memory)
    with Memory.open(new_memory, TestEmbedder(64)) as mem:
        import_memdreamer(mem, release)
    old, new = _frames(old_memory, LV), _frames(new_memory, LV)
    assert set(old) == set(new) and old != new

    monkeypatch.setenv("MEMTOOLS_FAULT_POINT", point)
    done = run_python("import sys\nfrom memtools.embed import TestEmbedder\nfrom memtools.memdreamer import "
                      "import_memdreamer\nfrom memtools.store import Memory\n"
                      "with Memory.open(sys.argv[1], TestEmbedder(64)) as m:\n    import_memdreamer(m, sys.argv[2])",
                      str(memory), str(release))
    assert done.returncode == -9, done.stderr[-2000:]
    monkeypatch.delenv("MEMTOOLS_FAULT_POINT")
    with Memory.open(memory, TestEmbedder(64)) as mem:
        mem.finish_indexes()  # the next writer recovers the killed one
        result = check(mem)
        with mem.reading() as g:
            listed = {Path(k.path).name for k in g.keyframes(LV, 0.0, math.inf)}
    assert result.ok, result.render()
    assert _frames(memory, LV) == (old if point == "graph-inserted" else new)
    assert set(_frames(memory, LV)) == listed


def test_leftovers_of_a_swap_are_no_damage_and_the_next_writer_removes_them(mem):
    from memtools.store import Memory
    from memtools.store.integrity.checker import check
    from memtools.store.writes.frame_swap import SWAP

    held = mem / SWAP / "0123abcd" / "old" / "kitchen"  # a write killed after it finished (no journal)
    held.mkdir(parents=True)
    (held / "000001.000.jpg").write_bytes(b"\xff\xd8 half a picture")
    staged = mem / "work" / "kitchen" / "staged" / "frames" / "kitchen"  # a build killed before its write
    staged.mkdir(parents=True)
    (staged / "000002.000.jpg").write_bytes(b"\xff\xd8 another")
    with Memory.open(mem, EMBEDDER) as memory:
        result = check(memory)
        assert result.ok, result.render()
        memory.finish_indexes()  # any write
    assert not (mem / SWAP).exists()
    assert (staged / "000002.000.jpg").is_file()  # the build's, for its resume


async def test_a_fleet_bundle_built_elsewhere_replaces_the_video_frames_included(tmp_path):
    from memtools.builder.bundle import BuildFolder, aperceive_video, write_bundle
    from memtools.builder.testing import scripted_vlm

    frames_driver.videos(tmp_path)
    memory = str(tmp_path / "memory")
    frames_driver.build(memory, str(tmp_path / "v1.mp4"), "kuzu")
    old = frames_driver.describe(memory)
    bundle = await aperceive_video(BuildFolder(tmp_path / "shared"), scripted_vlm(episode_sec=10), tmp_path / "v2.mp4",
                                   frames_driver.VIDEO, config=frames_driver.config())
    assert not (Path(memory) / "frames" / "clip" / "000006.400.jpg").exists()  # perceiving touched no memory file
    with frames_driver._open(memory) as mem:
        write_bundle(mem, bundle)
    new = frames_driver.describe(memory)
    assert not _problems(new, new, new) and new["frames"] != old["frames"]
    assert set(new["frames"]) == {k for k in bundle.frames}
