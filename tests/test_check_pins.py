"""scripts/check-pins.py: the installed tree against constraints.txt (what .ci/run fails on)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check-pins.py"


def _pins_of_this_env() -> list[str]:
    """The venv's distributions, read in a fresh interpreter: this process's path may hold more (Ray, once
    imported by another test, puts its bundled psutil and colorama on ``sys.path``)."""
    code = ("from importlib import metadata\n"
            "skip = {'memtools', 'pip', 'setuptools', 'wheel'}\n"
            "names = {d.metadata['Name']: d.version for d in metadata.distributions()\n"
            "         if d.metadata['Name'] and d.metadata['Name'].lower().replace('_', '-') not in skip}\n"
            "print('\\n'.join(f'{n}=={v}' for n, v in sorted(names.items())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.split()


def _check(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess:
    path = tmp_path / "constraints.txt"
    path.write_text("# a comment\n" + "\n".join(lines) + "\n")
    return subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, timeout=60)


def test_pins_that_match_this_environment_pass(tmp_path):
    out = _check(tmp_path, _pins_of_this_env())
    assert out.returncode == 0, out.stdout
    assert "pins match" in out.stdout


def test_every_kind_of_difference_is_printed(tmp_path):
    pins = _pins_of_this_env()
    numpy = next(p for p in pins if p.lower().startswith("numpy=="))
    dropped = next(p for p in pins if p.lower().startswith("pytest=="))
    pins = [p for p in pins if p not in (numpy, dropped)] + ["numpy==0.0.1", "no-such-package==1.0"]
    out = _check(tmp_path, pins)
    assert out.returncode == 1
    assert f"+ {dropped.lower()}  (installed, not in constraints.txt)" in out.stdout
    assert f"~ numpy: pinned 0.0.1, installed {numpy.split('==')[1]}" in out.stdout
    assert "- no-such-package==1.0  (pinned, not installed)" in out.stdout
    assert "scripts/pin-constraints.sh" in out.stdout


def test_a_line_that_is_not_a_pin_is_refused(tmp_path):
    out = _check(tmp_path, ["numpy>=1"])
    assert out.returncode == 1 and "is not NAME==VERSION" in out.stderr


def test_an_optional_extra_that_is_not_installed_is_left_out(tmp_path):
    """The README's install has no [faces]; constraints.txt pins it for .ci/run. Its pins count only once one of
    its packages is installed."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project.optional-dependencies]\nfaces = ["no-such-face-lib>=1", "no_such_face_models"]\n'
                         'dev = ["pytest"]\n')
    pins = _pins_of_this_env() + ["no-such-face-lib==1.0", "no-such-face-models==0.3"]
    path = tmp_path / "constraints.txt"
    path.write_text("\n".join(pins) + "\n")
    out = subprocess.run([sys.executable, str(SCRIPT), str(path), "--pyproject", str(pyproject)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "not checked: the extra [faces] (no-such-face-lib, no-such-face-models)" in out.stdout
    pyproject.write_text('[project.optional-dependencies]\nfaces = ["no-such-face-lib>=1", "pytest"]\n')
    out = subprocess.run([sys.executable, str(SCRIPT), str(path), "--pyproject", str(pyproject)],
                         capture_output=True, text=True, timeout=60)  # half installed: checked, and missing
    assert out.returncode == 1 and "- no-such-face-lib==1.0  (pinned, not installed)" in out.stdout
