"""The operations ``crash_random.py`` kills: how each one's inputs and starting memory are made
(once per graph engine) and the command line it runs. Every command is the real CLI in a child
process; ``delete-videos`` is the library's ``Memory.delete_video`` (memtools has no delete
command), run by ``tests/faults/crash_state.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULTS, TESTS = ROOT / "tests" / "faults", ROOT / "tests"
for _folder in (FAULTS, TESTS):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

CLI = "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))"
STATE = FAULTS / "crash_state.py"
DATA = ROOT.parent / "shared" / "data"
# commits are counted by a sitecustomize (children of migrate included): the fault's counter,
# armed far past any run, written at exit
SITE = """import atexit, os, sys
_to = os.environ.get("CRASH_COMMITS_TO")
def _write():
    f = sys.modules.get("memtools.store.faults")
    if _to and f is not None:
        with open(_to, "a") as h:
            h.write(f"{f._commits}\\n")
atexit.register(_write)
"""
NEVER = "1000000000:0"
BATCH = ["4"]  # videos per batch of the caption imports (the test sets fewer)


@dataclass
class Prepared:
    """One operation on one engine: the memory each run starts from (None: a new one), its command
    line (``{memory}`` and ``{name}`` filled per run), and what else the runs need."""
    args: list[str]
    base: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    done_when: list[str] = field(default_factory=list)  # a rerun refused this way found the work done
    isolated: bool = False  # settle each run in child processes (the engine may change)
    verify: list[str] | None = None  # a command that must exit 0 after the rerun


def env(work: Path, **extra: str) -> dict[str, str]:
    src = str(ROOT / "src")
    keep = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOLS_FAULT")}
    path = os.pathsep.join([str(work / "site"), str(work), src])
    return {**keep, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def _fill_memory(args: list[str], memory: Path) -> list[str]:
    return [str(memory) if a == "{memory}" else a for a in args]


def command(args: list[str]) -> list[str]:
    if args[0] == "delete-videos":
        return [sys.executable, str(STATE), "cli", *args]
    return [sys.executable, "-c", CLI, *args]


def memtools(work: Path, args: list[str], **extra: str) -> str:
    done = subprocess.run(command(args), capture_output=True, text=True, env=env(work, **extra), timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"memtools {' '.join(args[:2])} failed: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return done.stdout


def setup_work(work: Path, videos: int = 24, batch: int = 4) -> None:
    """The files every operation shares: caption files (a.json, b.json: ``videos`` videos, b
    changes every one), the site hook."""
    from crash_driver import captions

    BATCH[0] = str(batch)
    (work / "site").mkdir(parents=True, exist_ok=True)
    (work / "site" / "sitecustomize.py").write_text(SITE)
    if not (work / "a.json").exists():
        captions(work)
        for name in ("a.json", "b.json"):
            data = json.loads((work / name).read_text())
            (work / name).write_text(json.dumps(dict(list(data.items())[:videos])))


def _imported(work: Path, engine: str, file: str, name: str, *more: str, batch: str = "") -> Path:
    memory = work / f"base-{name}-{engine}"
    if not memory.exists():
        memtools(work, ["import-captions", file, "--memory", str(memory), "--batch-size", batch or BATCH[0],
                        "--no-progress",
                        "--graph-engine", engine, *more] + ([] if "--embedder" in more else ["--embedder", "test"]))
    return memory


def _import_args(file: str, engine: str, batch: int | None = None, embedder: str = "test") -> list[str]:
    return ["import-captions", file, "--memory", "{memory}", "--batch-size", str(batch or BATCH[0]), "--no-progress",
            "--embedder", embedder, "--graph-engine", engine]


def import_fresh(work: Path, engine: str) -> Prepared:
    return Prepared(_import_args(str(work / "a.json"), engine))


def import_replace(work: Path, engine: str) -> Prepared:
    return Prepared(_import_args(str(work / "b.json"), engine), base=_imported(work, engine, str(work / "a.json"), "a"))


def delete(work: Path, engine: str) -> Prepared:
    base = _imported(work, engine, str(work / "a.json"), "a")
    return Prepared(["delete-videos", "--memory", "{memory}", *(f"vid{v:02d}" for v in range(0, 24, 3))], base=base)


def purge(work: Path, engine: str) -> Prepared:
    """``forget --purge`` (issue 47): the video leaves every file. Run again after a kill that let it finish, it is
    refused as purged already; after every run the video's caption sentences are in no file of the memory."""
    base = _imported(work, engine, str(work / "a.json"), "a")
    sentences = json.loads((work / "a.json").read_text())["vid03"]["sentences"]
    return Prepared(["forget", "--memory", "{memory}", "vid03", "--purge"], base=base,
                    done_when=["was purged already"], verify=["bytes-gone", "--memory", "{memory}", *sentences])


def repair(work: Path, engine: str) -> Prepared:
    """A memory whose lance table of nodes is gone (derivable from the graph)."""
    base = work / f"base-damaged-{engine}"
    if not base.exists():
        shutil.copytree(_imported(work, engine, str(work / "a.json"), "a"), base)
        shutil.rmtree(base / "vectors" / "nodes.lance")
    return Prepared(["repair", "--memory", "{memory}"], base=base)


def migrate(work: Path, engine: str) -> Prepared:
    other = "ladybug" if engine == "kuzu" else "kuzu"
    base = work / f"base-built-{engine}"  # (an imported caption memory answers differently once migrated)
    if not base.exists():
        memtools(work, _fill_memory(build(work, engine).args, base))
    return Prepared(["migrate", "--memory", "{memory}", "--engine", other], base=base,
                    done_when=[f"already uses the {other} graph engine"], isolated=True)


def publish(work: Path, engine: str) -> Prepared:
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        raise RuntimeError("publish needs the local S3 server (crash_random.py starts one)")
    uri = "s3://crash/{name}"
    return Prepared(["publish", "--memory", "{memory}", uri], base=_imported(work, engine, str(work / "a.json"), "a"),
                    verify=["replica-equals", "--memory", "{memory}", uri])


def _video_inputs(work: Path) -> tuple[Path, Path, Path]:
    """A 60 s synthetic video, the chunk folder of a followed stream, the scripted backend and config."""
    import live_support
    from synthetic_video import scene, write_video

    config = work / "memtools.toml"
    if not config.exists():
        folder = work / "live"
        folder.mkdir(exist_ok=True)
        config, chunks = live_support.setup(folder)
        shutil.copy(folder / "fake_backend.py", work / "fake_backend.py")
        shutil.copy(config, work / "memtools.toml")
        for i in range(3):
            live_support.write_chunk(chunks, i)
        fps = live_support.FPS
        write_video(work / "video.mp4", [scene(i // (10 * fps)) for i in range(60 * fps)], fps=fps)
    return work / "video.mp4", work / "live" / "chunks", work / "memtools.toml"


def _recorded(work: Path, engine: str, source: list[str], name: str) -> list[str]:
    """Record the scripted model's answers once, then every run replays them."""
    video, chunks, config = _video_inputs(work)
    answers = work / f"{name}.jsonl"
    common = ["--memory", "{memory}", "--embedder", "test:64", "--config", str(config), "--speech", "none",
              "--graph-engine", engine, "--quiet"]
    if not answers.exists():
        scratch = work / f"record-{name}-{engine}"
        args = _fill_memory(source + common, scratch)
        memtools(work, [*args, "--vlm", "python:fake_backend:make", "--record", str(answers)])
    return [*source, *common, "--replay", str(answers)]


def build(work: Path, engine: str) -> Prepared:
    video, _, _ = _video_inputs(work)
    return Prepared(_recorded(work, engine, ["build", str(video)], "build"))


def follow(work: Path, engine: str) -> Prepared:
    _, chunks, _ = _video_inputs(work)
    return Prepared(_recorded(work, engine, ["build", "--follow", str(chunks), "--video-id", "cam",
                                             "--idle-timeout", "1"], "follow"))


def _built(work: Path, engine: str) -> tuple[Path, list[list[str]]]:
    """A memory of the synthetic video built once (replayed answers), and its entities' mention ids, most
    mentioned first."""
    base = work / f"base-built-{engine}"
    if not base.exists():
        memtools(work, [a.replace("{memory}", str(base)) for a in build(work, engine).args])
    code = ("import json, sys; from memtools.store import Memory; from memtools.embed.testing import TestEmbedder\n"
            "with Memory.open(sys.argv[1], TestEmbedder(64)) as m:\n"
            "    print(json.dumps([list(e.mentions) for e in m.entities.of_video(m.video_ids()[0])]))")
    listed = subprocess.run([sys.executable, "-c", code, str(base)], capture_output=True, text=True, check=True,
                            env=env(work)).stdout
    return base, sorted(json.loads(listed), key=len, reverse=True)


def merge(work: Path, engine: str) -> Prepared:
    """A user's correction (issue 32): two entities made one, through the change log and the journaled write.
    Named by mention ids, which a write keeps (canonical ``entity_NNN`` ids are numbered again by every write), so
    the command run again after a kill that let it land is refused as "already one entity"."""
    base, entities = _built(work, engine)
    return Prepared(["merge-entities", "--memory", "{memory}", entities[0][0], entities[1][0]], base=base,
                    done_when=["already one entity"])


def youcook2(work: Path, data: Path = DATA) -> Path | None:
    """The first 120 YouCook2 videos (read from ``data``, ../shared/data, at run time; None when
    it is not there) and a second version of each, in ``work``."""
    source = data / "youcook2" / "val.json"
    if not source.exists():
        return None
    first = work / "youcook2-a.json"
    if not first.exists():
        videos = dict(list(json.loads(source.read_text()).items())[:120])
        first.write_text(json.dumps(videos))
        for entry in videos.values():
            entry["sentences"] = [f"{s} (again)" for s in entry["sentences"]]
        (work / "youcook2-b.json").write_text(json.dumps(videos))
    return first


def audit_fresh(work: Path, engine: str) -> Prepared:
    return Prepared(_import_args(str(work / "youcook2-a.json"), engine, 10, "test:16"))


def audit_replace(work: Path, engine: str) -> Prepared:
    base = _imported(work, engine, str(work / "youcook2-a.json"), "youcook2", "--embedder", "test:16", batch="10")
    return Prepared(_import_args(str(work / "youcook2-b.json"), engine, 10, "test:16"), base=base)


OPS: dict[str, Callable[[Path, str], Prepared]] = {
    "import-fresh": import_fresh, "import-replace": import_replace, "build": build, "delete": delete,
    "repair": repair, "migrate": migrate, "publish": publish, "follow": follow, "merge": merge, "purge": purge}
AUDIT: dict[str, Callable[[Path, str], Prepared]] = {"audit-fresh": audit_fresh, "audit-replace": audit_replace}
