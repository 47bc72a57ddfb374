"""Install paths that work before memtools is on PyPI, the README's one command installing all its quickstart
shows (the voice weights included), and a release workflow ready to publish with PyPI trusted publishing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
INSTALL_DOCS = ("README.md", "docs/install.md", "docs/use-with-claude.md", "docs/mcp-server.md")
FROM_THE_INDEX = re.compile(r"uvx\s+(--from\s+memtools\b(?!-)|memtools\b(?![-/.]))")


def _first_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```bash\n(.*?)\n```", readme, re.S)
    assert found is not None
    return found[1]


def test_the_readmes_first_command_installs_the_voice_weights_too():
    command = _first_command()
    assert "bash scripts/install-dev.sh" in command and "examples/quickstart.sh" in command
    script = (ROOT / "scripts" / "install-dev.sh").read_text(encoding="utf-8")
    steps = [line for line in script.splitlines() if line.startswith("python -m pip install")]
    assert steps == ['python -m pip install "$@" -c constraints.txt -e ".[dev]"',
                     'python -m pip install "$@" --no-deps -c constraints.txt resemblyzer']
    pins = (ROOT / "constraints.txt").read_text(encoding="utf-8").lower()
    assert "\nresemblyzer==" in pins  # the tested version, as for every other package
    assert "bash scripts/install-dev.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")  # CI installs so


def test_the_install_docs_name_no_command_that_needs_memtools_on_pypi_without_saying_so():
    for name in INSTALL_DOCS:
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if FROM_THE_INDEX.search(line):
                nearby = " ".join(lines[max(0, number - 1):number + 2]).lower()
                assert "once" in nearby or "released" in nearby, f"{name}:{number + 1}: {line}"


def test_the_bundles_fallback_runs_its_own_wheel(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build-mcpb.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, check=True)
    with zipfile.ZipFile(done.stdout.strip()) as z:
        names = z.namelist()
        entry = z.read("server/main.py").decode()
        version = json.loads(z.read("manifest.json"))["version"]
    wheel = f"server/memtools-{version}-py3-none-any.whl"
    assert wheel in names
    assert f'WHEEL = "{Path(wheel).name}"' in entry and "memtools==" not in entry


def test_the_release_workflow_publishes_with_trusted_publishing():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8"))
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert triggers["release"]["types"] == ["published"]
    jobs = workflow["jobs"]
    build_steps = " ".join(str(step.get("run", "")) for step in jobs["build"]["steps"])
    assert "python -m build" in build_steps and "twine check" in build_steps and "mcpb" in build_steps
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["environment"]["name"] == "pypi"
    assert publish["needs"] == "build" and publish["if"] == "github.event_name == 'release'"
    assert any(str(step.get("uses", "")).startswith("pypa/gh-action-pypi-publish@") for step in publish["steps"])
    assert "password" not in json.dumps(publish)  # no token: PyPI trusts the workflow


def test_ci_builds_checks_and_runs_the_release():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/check-release.sh" in ci
    script = (ROOT / "scripts" / "check-release.sh").read_text(encoding="utf-8")
    for step in ("python -m build", "twine check --strict", "python3 -m venv", "--replay",
                 "@anthropic-ai/mcpb@", "validate manifest.json"):
        assert step in script, step
