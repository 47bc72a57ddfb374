"""memtools imports and works without the POSIX-only modules (fcntl, resource, termios, pwd, grp):
every module imports, and a caption import, a search and the writer lock work, in a child process
where memtools' own imports of them fail (``tests/portable/sitecustomize.py``), as on Windows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memtools.store.file_lock import try_lock, unlock

HERE = Path(__file__).parent
SRC = HERE.parent / "src"

EVERY_MODULE = """
import importlib, pkgutil, memtools
names = [m.name for m in pkgutil.walk_packages(memtools.__path__, "memtools.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
print("imported", len(names))
"""

WORK = """
import sys
from memtools.cli import main
srt, memory = sys.argv[1], sys.argv[2]
assert main(["import-captions", srt, "--memory", memory, "--embedder", "test:32"]) == 0
assert main(["tool", "search_nodes", "--memory", memory, "--query", "graphs", "--top-k", "1"]) == 0
assert main(["check", "--memory", memory]) == 0
"""


def _child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE / "portable"), str(SRC)])}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_guard_refuses_a_posix_only_import_from_memtools():
    done = subprocess.run([sys.executable, "-c", "import memtools.blas as m; exec('import fcntl', vars(m))"],
                          env={**os.environ, "PYTHONPATH": str(HERE / "portable")}, capture_output=True, text=True)
    assert done.returncode != 0 and "POSIX-only" in done.stderr


def test_every_module_imports_without_posix_only_modules():
    done = _child(EVERY_MODULE)
    assert int(done.stdout.split()[-1]) > 100


def test_import_search_and_check_work_without_posix_only_modules(tmp_path):
    srt = tmp_path / "My Talk.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:03,000\nHello world\n\n2\n00:00:04,000 --> 00:00:06,000\n"
                   "We talk about graphs\n", encoding="utf-8")
    done = _child(WORK, str(srt), str(tmp_path / "m"))
    assert "Imported 1 video(s)" in done.stdout
    assert "My_Talk/macro_0000" in done.stdout


def test_the_lock_excludes_a_second_handle_and_is_free_after_unlock(tmp_path):
    path = tmp_path / "memtools.lock"
    with open(path, "a+") as first, open(path, "a+") as second:
        assert try_lock(first)
        assert not try_lock(second)
        unlock(first)
        assert try_lock(second)
        unlock(second)
        unlock(second)  # a handle that holds no lock: nothing happens


def test_the_lock_excludes_another_process(tmp_path):
    path = tmp_path / "memtools.lock"
    probe = ("import sys; from memtools.store.file_lock import try_lock\n"
             "print(try_lock(open(sys.argv[1], 'a+')))")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with open(path, "a+") as held:
        assert try_lock(held)
        busy = subprocess.run([sys.executable, "-c", probe, str(path)], env=env, capture_output=True, text=True)
        unlock(held)
    free = subprocess.run([sys.executable, "-c", probe, str(path)], env=env, capture_output=True, text=True)
    assert (busy.stdout.strip(), free.stdout.strip()) == ("False", "True")
