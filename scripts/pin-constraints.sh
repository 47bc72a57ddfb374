#!/usr/bin/env bash
# Regenerate constraints.txt: the exact versions of memtools[dev]'s whole dependency tree (every
# extra of [dev], torch and the offline weights included, and [faces], which CI installs beside it),
# resolved from scratch in a throwaway virtual environment, so nothing else installed on this
# machine leaks in. One command; rerun it after any change to pyproject.toml's dependencies, review
# the diff, commit, then run .ci/run (whose scripts/check-pins.py fails while the pins and the
# installed tree differ).
#
#   scripts/pin-constraints.sh            # writes constraints.txt
#   scripts/pin-constraints.sh OUT.txt    # writes OUT.txt instead
#   PIN_VENV=/tmp/dev scripts/pin-constraints.sh   # keeps the resolved venv there (a new folder)
#
# The tested versions are kept where they still fit: the resolve starts from the old pins, so only
# new packages (and what they need) get new versions, and removed ones drop out. Where a changed
# range no longer fits an old pin, name it in PIN_RELAX to let it (alone) move, or set PIN_FRESH=1
# to resolve everything afresh; if the old pins cannot resolve at all the script falls back to that:
#
#   PIN_RELAX="mcp anyio" scripts/pin-constraints.sh
#   PIN_FRESH=1 scripts/pin-constraints.sh
#
# torch stays pinned at TORCH (on the CI machine a local CPU wheel; elsewhere take the CPU build
# with --extra-index-url https://download.pytorch.org/whl/cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH="torch==2.13.0"
out="${1:-constraints.txt}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="${PIN_VENV:-$work/venv}"
python3 -m venv "$venv"
py="$venv/bin/python"
$py -m pip install --quiet --upgrade pip
echo "$TORCH" > "$work/torch.txt"
fresh=(-c "$work/torch.txt")
old=("${fresh[@]}")
if [ -z "${PIN_FRESH:-}" ] && [ -f constraints.txt ]; then
  relax="^(torch$(for name in ${PIN_RELAX:-}; do printf '|%s' "$name"; done))=="
  grep -v '^#' constraints.txt | grep -viE "$relax" > "$work/old.txt" || true
  old+=(-c "$work/old.txt")
fi
if ! $py -m pip install --quiet "${old[@]}" -e ".[dev]"; then
  [ "${#old[@]}" -gt "${#fresh[@]}" ] || exit 1
  echo "pin-constraints: the old pins do not resolve with pyproject.toml; resolving everything afresh" >&2
  $py -m pip install --quiet "${fresh[@]}" -e ".[dev]"
fi
$py -m pip check
# the voice encoder's weights: Resemblyzer alone, without its torch/librosa dependencies (as .ci/run installs it)
$py -m pip install --quiet --no-deps "${old[@]}" resemblyzer
# the faces extra (dlib-bin, face-recognition-models), as .ci/run installs it
$py -m pip install --quiet "${old[@]}" -e ".[faces]"
{
  echo "# The tested versions of memtools[dev]'s whole dependency tree; .ci/run installs with -c constraints.txt"
  echo "# and fails (scripts/check-pins.py) when its venv differs from this file."
  echo "# Regenerate with scripts/pin-constraints.sh (a fresh venv, then pip freeze without memtools itself)."
  echo "# Extras outside [dev] stay unpinned and still resolve, but [faces], which .ci/run installs too."
  $py -m pip freeze --exclude-editable | grep -viE '^(memtools|pip|setuptools|wheel)==' \
    | sed -E 's/^torch==.*/'"$TORCH"'/' | LC_ALL=C sort -f
} > "$work/constraints.txt"
$py scripts/check-pins.py "$work/constraints.txt" >/dev/null
if [ -f "$out" ]; then
  diff <(grep -v '^#' "$out") <(grep -v '^#' "$work/constraints.txt") | grep '^[<>]' || true
fi
mv "$work/constraints.txt" "$out"
echo "wrote $out ($(grep -vc '^#' "$out") pins)"
