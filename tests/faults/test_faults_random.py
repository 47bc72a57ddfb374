"""kill -9 at random instants and inside the graph engine's commit, then the same command again
(issue 29, item 3): a quick seeded subset of ``benchmarks/crash_random.py``.

The named points (``test_faults_resume.py``) kill between the steps of a write; the world kills
anywhere, and most often inside the engine's own commit or checkpoint, which is the longest step.
Here 60 imports (8 videos, 2 per batch) and deletes, and 4 merges of two entities (a user's correction, through
the change log), are killed per engine: inside the n-th
COMMIT (``MEMTOOLS_FAULT_COMMIT=n:s``, s up to 0.3 s) or at an instant drawn over an
uninterrupted run. After each kill ``memtools check`` must be clean, or clean after the one
command it names; the same command again must exit 0 and leave the memory equal to an
uninterrupted run, with no id twice.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import crash_random  # noqa: E402 (after the path it lives on)
from _common import markdown_table  # noqa: E402

# (operation, mode, kills) per engine: 34 per engine, 68 in all
PLAN = [("import-fresh", "commit", 10), ("import-replace", "commit", 10), ("import-fresh", "random", 4),
        ("import-replace", "random", 3), ("delete", "commit", 3), ("merge", "commit", 4)]


@pytest.mark.slow
def test_kills_at_random_instants_leave_a_memory_the_same_command_finishes(tmp_path):
    engines = ["kuzu"] + (["ladybug"] if importlib.util.find_spec("ladybug") is not None else [])
    plan = [(op, engine, mode, kills) for engine in engines for op, mode, kills in PLAN]
    rows = crash_random.run(tmp_path, plan, seed=2029, workers=2, videos=8, batch=2)
    table = markdown_table(crash_random.COLUMNS, [r.counts() for r in rows])
    print(table)
    assert sum(len(r.cases) for r in rows) >= 30 * len(engines)
    problems = crash_random.failures(rows)
    assert not problems, f"{len(problems)} killed run(s) stuck or different:\n{table}\n" + "\n".join(problems)
