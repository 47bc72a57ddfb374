"""How the ``memtools`` command ends (``memtools.cli.console``): a one-shot read (``memtools tool``) skips the
interpreter's teardown of every module (~80 ms of a cold navigation call, ~230 ms of a cold search) but
still joins threads, runs every exit hook and flushes its output; other commands exit as Python does."""

from __future__ import annotations

import subprocess
import sys

# The console entry point as the installed `memtools` script runs it, with an exit hook, a background thread
# that exit must stop and join, and a note of how far the interpreter's own teardown got.
CONSOLE = """
import atexit, sys, time
from memtools import background

def slow():
    while not background.EXITING.is_set():
        time.sleep(0.01)
    time.sleep(0.1)
    print("background thread stopped", file=sys.stderr, flush=True)

background.start(slow, name="test-thread")
atexit.register(lambda: print("exit hook ran", file=sys.stderr, flush=True))

class Teardown:
    def __del__(self):
        print("module teardown ran", file=sys.stderr, flush=True)

sys.modules["__main__"].teardown_probe = Teardown()
sys.argv = ["memtools", *sys.argv[1:]]
from memtools.cli import console
console()
"""


def _console(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CONSOLE, *args], capture_output=True, text=True, timeout=120)


def test_a_tool_call_ends_without_teardown_but_with_its_output_threads_and_hooks(kitchen_memory_path):
    out = _console("tool", "get_summary", "--memory", str(kitchen_memory_path), "--video-id", "kitchen")
    assert out.returncode == 0, out.stderr
    assert "Video kitchen" in out.stdout and out.stdout.endswith("\n")
    assert "background thread stopped" in out.stderr and "exit hook ran" in out.stderr
    assert "module teardown ran" not in out.stderr
    # the same text as main() prints
    same = subprocess.run([sys.executable, "-c", "import sys; from memtools.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", "tool", "get_summary", "--memory", str(kitchen_memory_path),
                           "--video-id", "kitchen"], capture_output=True, text=True, timeout=120)
    assert same.stdout == out.stdout


def test_a_failed_tool_call_keeps_its_status_and_message(tmp_path):
    out = _console("tool", "get_summary", "--memory", str(tmp_path / "nothing-here"))
    assert out.returncode == 1
    assert "memtools tool: error: no memtools memory at" in out.stderr
    assert "exit hook ran" in out.stderr


def test_other_commands_exit_as_python_does(kitchen_memory_path):
    out = _console("info", "--memory", str(kitchen_memory_path))
    assert out.returncode == 0, out.stderr
    assert "module teardown ran" in out.stderr and "exit hook ran" in out.stderr
