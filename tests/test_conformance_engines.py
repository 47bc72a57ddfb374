"""The conformance suite (tests/conformance) on every graph engine.

This process runs it on kuzu (pytest collects tests/conformance directly); ladybug cannot be
imported beside kuzu, so its run is a child pytest, with ``MEMTOOLS_TEST_ENGINE=ladybug``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_conformance_suite_passes_on_ladybug_in_its_own_process():
    if importlib.util.find_spec("ladybug") is None:  # find_spec does not import it (kuzu is loaded here)
        pytest.skip("ladybug is not installed: pip install 'memtools[ladybug]' (the dev extra has it)")
    env = {**os.environ, "MEMTOOLS_TEST_ENGINE": "ladybug"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/conformance"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
