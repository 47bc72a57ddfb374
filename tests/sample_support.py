"""The README's quick start (examples/quickstart.sh), run once per test session by the ``quickstart`` fixture of
tests/conftest.py: tests/test_build_sample.py checks what it prints, tests/test_docs_run.py runs the docs on the
memories it wrote (sample-memory, sample-memory-week, sample-memory-show)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Quickstart:
    folder: Path             # holds sample-memory, sample-memory-week and sample-memory-show
    done: subprocess.CompletedProcess
    status_before: str | None  # `git status` of the checkout before and after (None: not a git checkout)
    status_after: str | None


def git_status() -> str | None:
    try:
        done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def run_quickstart(folder: Path) -> Quickstart:
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHON": sys.executable}
    before = git_status()
    done = subprocess.run(["bash", str(ROOT / "examples" / "quickstart.sh"), str(folder / "sample-memory")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return Quickstart(folder, done, before, git_status())
