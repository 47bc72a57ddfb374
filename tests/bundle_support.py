"""The Claude Desktop bundle as the tests build it (scripts/build-mcpb.py), shared by the bundle tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_bundle(out: Path) -> Path:
    """Build the ``.mcpb`` into ``out``; returns its path."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build-mcpb.py"), "--out", str(out)],
                          capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())
