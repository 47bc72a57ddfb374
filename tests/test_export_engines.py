"""An export made on one graph engine, imported on the other, answers the tools as the memory did
(kuzu and ladybug cannot be loaded in one process: each side runs in its own child)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
EXPORT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from test_export import answers, build
from memtools.archive import export_memory
memory = build(Path(sys.argv[2]), frames=2, engine=sys.argv[3])
export_memory(memory, Path(sys.argv[4]), with_biometrics=True, with_keyframes=True)
print(json.dumps(answers(memory)))
"""
IMPORT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from test_export import answers
from memtools.archive import import_export
from memtools.store import Memory
report = import_export(Path(sys.argv[2]), Path(sys.argv[3]), graph_engine=sys.argv[4])
assert report.embedded == 0 and report.clusters_differ == 0, report.render()
with Memory.open(Path(sys.argv[3])) as memory:
    assert memory.graph_engine.name == sys.argv[4]
print(json.dumps(answers(Path(sys.argv[3]))))
"""


def _child(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, str(HERE), *args], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("source", "target"), [("kuzu", "ladybug"), ("ladybug", "kuzu")])
def test_an_export_crosses_the_graph_engines(tmp_path, source, target):
    if importlib.util.find_spec("ladybug") is None:
        pytest.skip("ladybug is not installed: pip install 'memtools[ladybug]' (the dev extra has it)")
    archive = tmp_path / "memory.zip"
    before = _child(EXPORT, str(tmp_path / "source"), source, str(archive))
    after = _child(IMPORT, str(archive), str(tmp_path / "copy"), target)
    assert after.keys() == before.keys()
    for key in before:
        assert after[key] == before[key], key
