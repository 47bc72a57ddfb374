"""The Pythons memtools says it supports are the ones it tests, and the static checks read code as the lowest.

pyproject.toml's classifiers name the tested versions (scripts/check-python-versions.sh reads them and
runs the base install check on each, in CI); ``requires-python``, ruff's ``target-version`` and mypy's
``python_version`` must all follow the lowest, so a 3.11-only name (``datetime.UTC``,
``typing.NotRequired``, ``tomllib``) fails mypy instead of a user's first command on 3.10.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # a dependency of memtools on Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check-python-versions.sh"


def declared() -> list[tuple[int, int]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = [re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c) for c in project.get("classifiers", [])]
    return sorted((3, int(m.group(1))) for m in found if m)


def test_requires_python_ruff_and_mypy_follow_the_lowest_tested_version():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    versions = declared()
    assert versions, "pyproject.toml's classifiers name no Python 3.X version"
    assert [minor for _, minor in versions] == list(range(versions[0][1], versions[-1][1] + 1)), versions
    low = f"{versions[0][0]}.{versions[0][1]}"
    assert config["project"]["requires-python"] == f">={low}"
    assert config["tool"]["ruff"]["target-version"] == "py" + low.replace(".", "")
    assert config["tool"]["mypy"]["python_version"] == low


def test_ci_checks_every_declared_version_before_the_suite():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line.strip() for line in run if line.strip() and not line.lstrip().startswith("#")]
    assert "scripts/check-python-versions.sh" in commands
    assert commands.index("scripts/check-python-versions.sh") < commands.index("python -m pytest -q -ra")


def copy_of_the_checks(folder: Path, classifiers: list[str]) -> Path:
    """The two scripts and a pyproject.toml that declares ``classifiers``, in a folder of their own."""
    (folder / "scripts").mkdir()
    for name in ("check-python-versions.sh", "check-base-install.sh"):
        shutil.copy2(ROOT / "scripts" / name, folder / "scripts" / name)
    lines = "".join(f'    "Programming Language :: Python :: {c}",\n' for c in classifiers)
    (folder / "pyproject.toml").write_text(f'[project]\nname = "x"\nclassifiers = [\n{lines}]\n', encoding="utf-8")
    return folder / "scripts" / "check-python-versions.sh"


def test_a_declared_version_missing_from_the_machine_fails_before_installing_anything(tmp_path):
    script = copy_of_the_checks(tmp_path, ["3.11", "3.99"])
    done = subprocess.run([script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "declares Python 3.99, not found on this machine" in done.stderr
    assert "pyenv install" in done.stderr and "check-base-install" not in done.stdout


def test_only_declared_versions_can_be_asked_for(tmp_path):
    script = copy_of_the_checks(tmp_path, ["3.11"])
    done = subprocess.run([script, "3.9"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Python 3.9 is not declared" in done.stderr
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    done = subprocess.run([script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "classifiers name no Python 3.X version" in done.stderr
