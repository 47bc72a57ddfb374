"""Compare the packages installed in this interpreter's environment with constraints.txt.

    .venv-ci/bin/python scripts/check-pins.py [constraints.txt] [--pyproject pyproject.toml]

Prints every package that is installed but not pinned, pinned but not installed, or installed at
another version, and exits 1 when there is any (memtools itself and pip/setuptools/wheel are left
out; a local version such as ``+cpu`` is ignored). Fix: run scripts/pin-constraints.sh and commit
the new constraints.txt. Standard library only, so it runs in any venv.

constraints.txt also pins the extras of ``OPTIONAL_EXTRAS`` (``faces``: .ci/run installs it, the README's
install does not): when none of an extra's packages is installed, its pins are left out (and said so); once
one is, they are checked like the rest.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

IGNORED = {"memtools", "pip", "setuptools", "wheel"}
OPTIONAL_EXTRAS = ("faces",)


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


def extra_packages(pyproject: Path, extra: str) -> set[str]:
    """The packages an extra of ``[project.optional-dependencies]`` names (read without tomllib: 3.10 has none)."""
    text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    match = re.search(rf"^{re.escape(extra)}\s*=\s*\[([^\]]*)\]", text, re.M)
    names = re.findall(r"[\"']([A-Za-z0-9._-]+)", match.group(1)) if match else []
    return {canonical(n) for n in names}


def main(argv: list[str]) -> int:
    args = list(argv[1:])
    repo = Path(__file__).resolve().parents[1]
    pyproject = repo / "pyproject.toml"
    if "--pyproject" in args:
        at = args.index("--pyproject")
        pyproject = Path(args[at + 1])
        del args[at:at + 2]
    path = Path(args[0] if args else repo / "constraints.txt")
    pins, have = read_pins(path), installed()
    absent = []
    for extra in OPTIONAL_EXTRAS:
        names = extra_packages(pyproject, extra) & pins.keys()
        if names and not names & have.keys():
            absent.append(f"[{extra}] ({', '.join(sorted(names))})")
            pins = {n: v for n, v in pins.items() if n not in names}
    diff = differences(pins, have)
    if diff:
        print(f"{path} does not match this environment ({sys.prefix}):", *diff,
              "Run scripts/pin-constraints.sh and commit constraints.txt.", sep="\n")
        return 1
    left = f"; not installed, so not checked: the extra {', '.join(absent)}" if absent else ""
    print(f"{path}: all {len(pins)} pins match {sys.prefix}{left}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
