"""One line of numbers for a run of the MCP conformance suite (scripts/conformance.sh prints it).

    python conformance/summarize.py RESULTS_DIR REQUIREMENTS.yaml EXPECTED_FAILURES.yaml

RESULTS_DIR is the suite's ``-o`` folder (``server-<scenario>-<time>/checks.json`` per scenario), REQUIREMENTS.yaml the
suite's own list of what a revision scores (``requirements/<revision>.yaml`` in its package), EXPECTED_FAILURES.yaml
ours. Scenarios and checks are counted as the suite's baseline mode counts them: a WARNING fails a check. The
standard library only (the YAML files are read line by line: both are plain lists).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FAILING = {"FAILURE", "WARNING"}


def listed(path: Path, key: str) -> list[str]:
    """The ``- item`` lines of the top-level list ``key:`` (comments dropped)."""
    items: list[str] = []
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if re.match(r"^\S", line):
            inside = line.split("#")[0].strip() == f"{key}:"
            continue
        found = re.match(r"^\s+-\s+([^\s#]+)", line)
        if inside and found:
            items.append(found.group(1))
    return items


def results(folder: Path) -> dict[str, list[dict]]:
    """scenario -> its checks."""
    out: dict[str, list[dict]] = {}
    for checks in sorted(folder.glob("server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", checks.parent.name)
        out[scenario] = json.loads(checks.read_text(encoding="utf-8"))
    return out


def summary(folder: Path, requirements: Path, expected: Path) -> str:
    scored = set(listed(requirements, "server"))
    allowed = set(listed(expected, "server"))
    ran = results(folder)
    clean = [s for s in ran if s in scored and not any(c["status"] in FAILING for c in ran[s])]
    expected_only = [s for s in ran if s in scored and s not in clean
                     and all(f"{s}:{c['id']}" in allowed for c in ran[s] if c["status"] in FAILING)]
    other = sorted(s for s in ran if s in scored and s not in clean and s not in expected_only)
    checks = [c for s in ran if s in scored for c in ran[s] if c["status"] != "INFO"]
    failing = [c for c in checks if c["status"] in FAILING]
    unscored = sorted(s for s in ran if s not in scored)
    unscored_failing = [s for s in unscored if any(c["status"] == "FAILURE" for c in ran[s])]
    named = f" ({', '.join(unscored_failing)})" if unscored_failing else ""
    return (f"{len([s for s in ran if s in scored])} scored scenarios: {len(clean)} pass every check, "
            f"{len(expected_only)} fail only listed checks, {len(other)} fail otherwise"
            f"{' (' + ', '.join(other) + ')' if other else ''}; checks {len(checks) - len(failing)} passed, "
            f"{len(failing)} failed; not scored by the suite (pending, extension, added after the revision): "
            f"{len(unscored)} run, {len(unscored_failing)} failing{named}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    print(summary(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])))
