"""Running one page's code blocks (tests/docs_blocks.py) in order, as a reader following it would, on copies of the
sample memories that the quickstart wrote once per test session.

Each page gets its own folder, the working directory, holding links to the checkout's examples/, scripts/,
benchmarks/ and mcp_server/, and ``$HOME`` (its ``home/``). The names the pages use stand for the sample:

* ``my-memory``, ``mem``, ``DIR``, ``library``, ``~/video-memory``: a copy of the sample memory (one video,
  ``sample``), made when the page names it; ``sample-memory`` and ``sample-memory-week``: copies of what the
  quickstart wrote. ``/abs/path/to/...``, ``/home/me/...`` and ``/srv/...`` are in ``$HOME``, ``/data/...`` in
  the page's folder, ``/videos/...`` in its ``videos/``; ``my-video/...`` ids name ``sample/...`` unless the
  page builds my-video.mp4;
* ``my-video.mp4``, ``talk.mp4``, ``cooking.mp4``, ``long.mp4``: the sample video; ``talk.srt``: its narration
  as subtitles; ``talks/``: a folder holding it; ``videos.txt``: a list naming one copy of the video;
* a hosted vision model (``--vlm SPEC``): the sample's recorded answers (``--replay``), which fit any copy of
  the sample video, priced as gpt-4o-mini (``$MEMTOOLS_PRICES``); a CLIP image embedder (``--image-embedder
  hf:...``): the test image embedder; a hosted chat model in Python (``chat_model_from_spec("openai:...")``):
  a scripted one (``memtools.agent.testing``);
* S3 (``s3://my-bucket/...``): a local S3 server (moto), the ``AWS_*`` variables pointing at it;
* port 8765: a free port. A server over HTTP runs in the background until the next one starts or the page
  ends; one over stdio gets an empty stdin, so it starts, serves nothing and exits.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from docs_blocks import NEEDS, Block, Command, _code, runnable_blocks, shown_output_problems
from docs_support import REPO

SAMPLE_NAMES = ("my-memory", "mem", "DIR", "library", "video-memory")  # here, or in $HOME (~/video-memory)
VIDEO_NAMES = ("my-video.mp4", "talk.mp4", "cooking.mp4", "long.mp4")
LINKED = ("examples", "scripts", "benchmarks", "mcp_server", "src", "constraints.txt", "pyproject.toml")
_SERVER = re.compile(r"^(?:\w+=\S*\s+)*(?:memtools(?:\s+-v)?\s+serve|memtools-mcp"
                     r"|python3?\s+\S*mcp_server/server\.py)\b")
_MARK = "\x1edocs-run"


@dataclass
class Samples:
    """What the session made once: the quickstart's folder, a one-video sample memory, the video, its answers."""

    quickstart: Path
    sample: Path
    video: Path
    responses: Path
    narration: list[tuple[float, str]]


@dataclass
class PageRun:
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def have(need: str) -> bool:
    if need == "voice-weights":
        from memtools.speech.voice_weights import weights_path

        return weights_path() is not None
    if need == "faces":
        import importlib.util

        return importlib.util.find_spec("dlib") is not None
    if need == "mcp2":
        import mcp

        return hasattr(mcp, "Client")
    raise KeyError(need)


class PageRunner:
    def __init__(self, page: Path, samples: Samples, folder: Path) -> None:
        self.page, self.samples, self.work, self.home = page, samples, folder, folder / "home"
        self.port = _free_port()
        self.result = PageRun()
        self.s3: object | None = None
        self.builds_my_video = "my-video.mp4" in "\n".join(b.source for b in runnable_blocks(page))
        self.env = {**os.environ, "HOME": str(self.home), "MEMTOOLS_PORT": str(self.port), "NO_COLOR": "1",
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                    "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}

    # --- the page's text, made runnable here ---------------------------------------------------------------

    def substitute(self, text: str, shell: bool) -> str:
        for prefix in ("/abs/path/to/", "/abs/path/", "/home/me/", "/srv/"):
            text = text.replace(prefix, f"{self.home}/")
        text = text.replace("/data/", f"{self.work}/")
        text = re.sub(r"(?<![\w.:/-])/videos/", f"{self.work}/videos/", text)
        text = text.replace("8765", str(self.port))
        if not self.builds_my_video:  # my-memory is the sample: its ids are sample/...
            text = text.replace("my-video/", "sample/")
        if shell:
            text = re.sub(r"--vlm\s+\S+", f"--replay {self.samples.responses}", text)
            text = re.sub(r"--image-embedder\s+hf:\S+", "--image-embedder test", text)
        return text

    def prepare(self, blocks: list[Block]) -> None:
        text = "\n".join([self.substitute(c.text, b.kind != "python") for b in blocks for c in b.commands()
                          if not c.skipped] + [s for b in blocks for s in b.setup])
        for name in LINKED:
            (self.work / name).symlink_to(REPO / name)
        prices = self.work / "replay-prices.toml"  # the recorded answers cost what gpt-4o-mini's would (--max-cost)
        prices.write_text(f'[models."replay:{self.samples.responses.name}"]\ninput = 0.15\noutput = 0.60\n',
                          encoding="utf-8")
        self.env["MEMTOOLS_PRICES"] = str(prices)
        self.home.mkdir()
        for name in SAMPLE_NAMES:
            if re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w-])", text):
                shutil.copytree(self.samples.sample, self.work / name)
            if re.search(rf"(?:~|{re.escape(str(self.home))})/{re.escape(name)}(?![\w-])", text):
                shutil.copytree(self.samples.sample, self.home / name)
        for name in ("sample-memory", "sample-memory-week"):
            if re.search(rf"(?<![\w.-]){name}(?![\w-])", text):
                shutil.copytree(self.samples.quickstart / name, self.work / name)
        for name in VIDEO_NAMES:
            if name in text:
                (self.work / name).symlink_to(self.samples.video)
        if "talk.srt" in text or "talks/" in text:
            srt = "\n".join(f"{n}\n{_stamp(t)} --> {_stamp(t + 6)}\n{said}\n"
                            for n, (t, said) in enumerate(self.samples.narration, 1))
            (self.work / "talk.srt").write_text(srt, encoding="utf-8")
            (self.work / "talks").mkdir()
            (self.work / "talks" / "talk.srt").write_text(srt, encoding="utf-8")
        if "videos.txt" in text:
            (self.work / "videos").mkdir()
            (self.work / "videos" / "kitchen.mp4").symlink_to(self.samples.video)
            (self.work / "videos.txt").write_text(f"{self.work / 'videos' / 'kitchen.mp4'}\n", encoding="utf-8")
        if "s3://" in text:
            self._start_s3(set(re.findall(r"s3://([a-z0-9.-]+)", text)))

    def _start_s3(self, buckets: set[str]) -> None:
        import logging

        import boto3
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        self.s3 = server
        endpoint = f"http://{host}:{port}"
        self.env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1",
                        AWS_ENDPOINT_URL=endpoint)
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                              aws_secret_access_key="testing")
        for bucket in buckets:
            client.create_bucket(Bucket=bucket)

    # --- running -------------------------------------------------------------------------------------------

    def run(self) -> PageRun:
        blocks = runnable_blocks(self.page)
        self.prepare(blocks)
        try:
            for block in blocks:
                missing = [n for n in block.needs if not have(n)]
                if block.skip or missing:
                    why = block.skip or "needs " + "; ".join(NEEDS[n] for n in missing)
                    self.result.skipped.append(f"{block.where} (whole block): {why}")
                    continue
                commands = block.commands()
                for c in commands:
                    if c.skipped:
                        self.result.skipped.append(f"{block.where} `{c.text[:60]}`: {c.skipped}")
                todo = [c for c in commands if not c.skipped]
                if todo:
                    (self._python if block.kind == "python" else self._shell)(block, todo)
        finally:
            self.stop_server()
            if self.s3 is not None:
                self.s3.stop()  # type: ignore[attr-defined]
        return self.result

    def _shell(self, block: Block, commands: list[Command]) -> None:
        lines = [f"cd {self.work}"] + [self.substitute(s, True) for s in block.setup]
        for n, c in enumerate(commands):
            text = self.substitute(c.text, True)
            code = _code(text)
            if _SERVER.match(code) and re.search(r"--http\b|--transport\s+http", code):
                script = self.work / f"server-{block.line}-{n}.sh"
                script.write_text(f"exec {text}\n", encoding="utf-8")
                text = f"docs_run_serve {script}"
            elif _SERVER.match(code):
                text = f"{text} < /dev/null"
            lines += [f"echo '{_MARK}:{n}'", text, f"echo \"{_MARK}:{n}:rc=$?\""]
        script = "\n".join([_HELPERS.format(work=self.work, python=sys.executable), *lines]) + "\n"
        done = subprocess.run(["bash", "-c", script], cwd=self.work, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
        outputs = _split(done.stdout)
        for n, c in enumerate(commands):
            out, rc = outputs.get(n, ("", None))
            self.result.ran.append(f"{block.where} `{c.text[:60]}`")
            if rc != c.status:
                self.result.failures.append(f"{block.where}: `{c.text}` exited {rc}, not {c.status}:\n{out[-3000:]}")
            elif missing := shown_output_problems([self.substitute(ln, True) for ln in c.shown], out):
                self.result.failures.append(f"{block.where}: `{c.text}` did not show:\n  " + "\n  ".join(missing)
                                            + f"\nits output:\n{out[-3000:]}")

    def _python(self, block: Block, commands: list[Command]) -> None:
        source = self.substitute(block.source, False)
        code = compile(source, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        namespace: dict = {"__name__": "__docs__"}
        out = io.StringIO()
        with _environment(self.env, self.work), contextlib.redirect_stdout(out), _scripted_chat_models(source):
            try:
                for setup in block.setup:
                    exec(setup, namespace)
                result = eval(code, namespace)
                if asyncio.iscoroutine(result):
                    asyncio.run(result)
            except Exception as exc:  # the page's code failed: say where and how
                self.result.failures.append(f"{block.where}: the Python block raised {exc!r}\n{out.getvalue()[-2000:]}")
            finally:
                for value in namespace.values():  # memories the block opened and left open
                    if type(value).__name__ == "Memory":
                        value.close()
        self.result.ran.append(f"{block.where} (Python)")

    def stop_server(self) -> None:
        pid_file = self.work / "server.pid"
        if pid_file.exists():
            _stop(int(pid_file.read_text()))
            pid_file.unlink()


def _stamp(t: float) -> str:
    return f"{int(t // 3600):02d}:{int(t % 3600 // 60):02d}:{int(t % 60):02d},{int(t * 1000 % 1000):03d}"


def _split(stdout: str) -> dict[int, tuple[str, int | None]]:
    """Each command's output and exit status, from the marks the script printed around it."""
    found: dict[int, tuple[str, int | None]] = {}
    for part in stdout.split(f"{_MARK}:")[1:]:
        head, _, body = part.partition("\n")
        m = re.fullmatch(r"(\d+):rc=(\d+)", head.strip())
        if m:
            n = int(m.group(1))
            found[n] = (found.get(n, ("", None))[0], int(m.group(2)))
        elif head.strip().isdigit():
            found[int(head)] = (body, None)
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie nobody reaped has stopped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stop(pid: int) -> None:
    """Stop a server this runner started (by its pid): TERM, then KILL after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if not _alive(pid):
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


_HELPERS = """
docs_run_serve() {{  # a server over HTTP, in the background (the previous one stopped), once it listens
  if [ -f {work}/server.pid ]; then
    p=$(cat {work}/server.pid); kill "$p" 2>/dev/null; wait "$p" 2>/dev/null
    {python} -c "import sys, docs_runner; docs_runner._stop(int(sys.argv[1]))" "$p"
  fi
  bash "$1" > "$1.log" 2>&1 &
  echo $! > {work}/server.pid
  {python} -c "import sys, docs_runner; sys.exit(docs_runner.wait_listening(int(sys.argv[1]), sys.argv[2]))" \
    "$!" "$1.log"
}}
"""


def wait_listening(pid: int, log: str, timeout: float = 90.0) -> int:
    """0 once the server ``pid`` accepts connections on ``$MEMTOOLS_PORT`` or the port its command names."""
    text = Path(log).with_suffix("").read_text(encoding="utf-8")
    port = int(m.group(1)) if (m := re.search(r"--port\s+(\d+)", text)) else int(os.environ["MEMTOOLS_PORT"])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            print(f"the server stopped:\n{Path(log).read_text(encoding='utf-8')[-2000:]}")
            return 1
        with socket.socket() as s, contextlib.suppress(OSError):
            s.settimeout(0.5)
            s.connect(("127.0.0.1", port))
            print(f"(serving on port {port})")
            return 0
        time.sleep(0.2)
    print(f"the server did not listen within {timeout:.0f} s")
    return 1


@contextlib.contextmanager
def _environment(env: dict[str, str], cwd: Path):
    before, here = dict(os.environ), Path.cwd()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(before)


@contextlib.contextmanager
def _scripted_chat_models(source: str):
    """A hosted chat model (``chat_model_from_spec("openai:...")``) answers from a script instead: one search,
    then an answer (memtools.agent.testing), so the ORA examples run offline."""
    if 'chat_model_from_spec("openai:' not in source:
        yield
        return
    import memtools.agent
    from memtools.agent.testing import ScriptedChatModel, tool_call

    def scripted(spec: str, **_: object) -> ScriptedChatModel:
        return ScriptedChatModel(responses=[
            tool_call("search_nodes", useful_info="the pan scene", query="a pan catches fire"),
            tool_call("answer", useful_info="the lid", answer="A", reasoning="the cook covers the pan")])

    real = memtools.agent.chat_model_from_spec
    memtools.agent.chat_model_from_spec = scripted  # type: ignore[assignment]
    try:
        yield
    finally:
        memtools.agent.chat_model_from_spec = real
