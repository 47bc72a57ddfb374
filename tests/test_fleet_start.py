"""Starting a local Ray cluster for a fleet build prints nothing of lance's. The fork that starts Ray's
daemons comes after lance is loaded (a memory was opened), and lance warns at every fork that it is
not fork-safe, which does not apply to children that exec at once (``memtools.fleet.ray_runner.start_ray``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("ray")

START = """
import sys
import lance, ray
from memtools.fleet.ray_runner import start_ray
if sys.argv[1] == "memtools":
    start_ray(ray, None)
else:
    ray.init(log_to_driver=False, configure_logging=False)
ray.shutdown()
"""
WARNING = "lance is not fork-safe"


def _start(way: str, folder) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-W", "default", "-c", START, way], capture_output=True, text=True,
                          timeout=240, cwd=folder)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.slow
def test_a_fleet_starting_ray_after_lance_prints_no_fork_warning(tmp_path):
    plain = _start("plain", tmp_path)
    if WARNING not in plain.stderr:
        pytest.skip("this lance does not warn at a fork: nothing to leave out")
    assert WARNING not in _start("memtools", tmp_path).stderr
