"""Compare the packages installed in this interpreter's environment with constraints.txt.

    .venv-ci/bin/python scripts/check-pins.py [constraints.txt]

Prints every package that is installed but not pinned, pinned but not installed, or installed at
another version, and exits 1 when there is any (memtools itself and pip/setuptools/wheel are left
out; a local version such as ``+cpu`` is ignored). Fix: run scripts/pin-constraints.sh and commit
the new constraints.txt. Standard library only, so it runs in any venv.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

IGNORED = {"memtools", "pip", "setuptools", "wheel"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def base_version(version: str) -> str:
    return version.split("+", 1)[0]


def read_pins(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep:
            raise SystemExit(f"{path}: {line!r} is not NAME==VERSION; regenerate with scripts/pin-constraints.sh")
        pins[canonical(name.split("[", 1)[0])] = base_version(version.strip())
    return pins


def installed() -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and canonical(name) not in IGNORED:
            found[canonical(name)] = base_version(dist.version)
    return found


def differences(pins: dict[str, str], have: dict[str, str]) -> list[str]:
    lines = []
    for name in sorted(pins.keys() | have.keys()):
        pinned, got = pins.get(name), have.get(name)
        if pinned is None:
            lines.append(f"  + {name}=={got}  (installed, not in constraints.txt)")
        elif got is None:
            lines.append(f"  - {name}=={pinned}  (pinned, not installed)")
        elif pinned != got:
            lines.append(f"  ~ {name}: pinned {pinned}, installed {got}")
    return lines


def main(argv: list[str]) -> int:
    path = Path(argv[1] if len(argv) > 1 else Path(__file__).resolve().parents[1] / "constraints.txt")
    diff = differences(read_pins(path), installed())
    if diff:
        print(f"{path} does not match this environment ({sys.prefix}):", *diff,
              "Run scripts/pin-constraints.sh and commit constraints.txt.", sep="\n")
        return 1
    print(f"{path}: all {len(read_pins(path))} pins match {sys.prefix}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
