#!/usr/bin/env bash
# The MCP tests (tests/test_mcp*.py, and the build jobs served over MCP) on mcp 2.x.
#
# memtools serves on mcp 1.x and 2.x alike (src/memtools/mcp/sdk.py). The dev install
# (.[dev]) resolves to mcp 1.x, because langchain-mcp-adapters requires mcp<2, so the main test
# run covers 1.x; this script covers 2.x in its own venv: memtools (editable) + mcp 2.x + pytest,
# at the versions of constraints.txt less the mcp 1.x side. The adapters test is skipped here.
#
#   scripts/test-mcp2.sh                  # venv .venv-mcp2, mcp 2.3.0
#   MCP2_VENV=/tmp/v MCP2_VERSION=2.3.0 scripts/test-mcp2.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${MCP2_VENV:-.venv-mcp2}"
version="${MCP2_VERSION:-2.3.0}"
python3 -m venv "$venv"
py="$venv/bin/python"
grep -viE '^(mcp|mcp-types|langchain-mcp-adapters)==' constraints.txt > "$venv/constraints-mcp2.txt"
$py -m pip install --quiet --upgrade pip
$py -m pip install --quiet -c "$venv/constraints-mcp2.txt" -e . "mcp==$version" pytest pytest-asyncio
$py -c "from memtools.mcp.sdk import SDK_MAJOR; import sys; sys.exit(0 if SDK_MAJOR == 2 else 'mcp 2.x expected')"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
$py -m pytest -q -ra -p no:cacheprovider tests/test_mcp*.py tests/test_jobs_mcp.py tests/test_jobs_tasks.py "$@"
