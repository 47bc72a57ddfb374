"""The docs site builds from docs/ exactly as CI builds it (`mkdocs build --strict`, see
mkdocs.yml: a broken link or anchor, or a page left out of the nav, is an error), with no
warning at all, offline."""

from __future__ import annotations

import os
import subprocess
import sys

from docs_support import REPO


def build_site(site_dir, config=REPO / "mkdocs.yml") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site_dir)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_docs_site_builds_without_warnings(tmp_path):
    done = build_site(tmp_path / "site")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "site" / "index.html").exists()
    built = {p.stem for p in (REPO / "docs").glob("*.md")} - {"index"}
    missing = sorted(name for name in built if not (tmp_path / "site" / name / "index.html").exists())
    assert not missing, f"pages not in the site: {missing}"


def test_a_broken_anchor_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[there](other.md#no-such-heading)\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\n## A heading\n", encoding="utf-8")
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.split("\nnav:")[0] + "\nnav:\n  - Home: index.md\n  - Other: other.md\n"
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    done = build_site(tmp_path / "site", tmp_path / "mkdocs.yml")
    assert done.returncode != 0
    assert "no-such-heading" in done.stdout + done.stderr


QUICK_START = ('python3 -m venv .venv && . .venv/bin/activate && bash scripts/install-dev.sh '
               '&& bash examples/quickstart.sh')
TEST_COMMAND = ". .venv/bin/activate && python -m pytest -q"


def test_the_readme_is_a_front_page():
    """At most 200 lines, the picture, and the two commands exactly as a new user copies them."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move a section to docs/"
    assert QUICK_START in lines and TEST_COMMAND in lines
    assert "](docs/sample-timeline.png)" in readme
