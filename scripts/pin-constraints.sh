#!/usr/bin/env bash
# Regenerate constraints.txt: the exact versions of memtools[dev]'s whole dependency tree (every
# extra of [dev], torch and the offline weights included), resolved from scratch in a throwaway
# virtual environment, so nothing else installed on this machine leaks in. One command; rerun it
# after any change to pyproject.toml's dependencies, review the diff, commit, then run .ci/run
# (whose scripts/check-pins.py fails while the pins and the installed tree differ).
#
#   scripts/pin-constraints.sh            # writes constraints.txt
#   scripts/pin-constraints.sh OUT.txt    # writes OUT.txt instead
#   PIN_VENV=/tmp/dev scripts/pin-constraints.sh   # keeps the resolved venv there (a new folder)
#
# torch stays pinned at TORCH (on the CI machine a local CPU wheel; elsewhere take the CPU build
# with --extra-index-url https://download.pytorch.org/whl/cpu). Nothing of the old constraints.txt
# is reused: a dependency that was added, removed or widened resolves afresh.
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
$py -m pip install --quiet -c "$work/torch.txt" -e ".[dev]"
$py -m pip check
{
  echo "# The tested versions of memtools[dev]'s whole dependency tree; .ci/run installs with -c constraints.txt"
  echo "# and fails (scripts/check-pins.py) when its venv differs from this file."
  echo "# Regenerate with scripts/pin-constraints.sh (a fresh venv, then pip freeze without memtools itself)."
  echo "# Extras outside [dev] stay unpinned and still resolve."
  $py -m pip freeze --exclude-editable | grep -viE '^(memtools|pip|setuptools|wheel)==' \
    | sed -E 's/^torch==.*/'"$TORCH"'/' | LC_ALL=C sort -f
} > "$work/constraints.txt"
$py scripts/check-pins.py "$work/constraints.txt" >/dev/null
if [ -f "$out" ]; then
  diff <(grep -v '^#' "$out") <(grep -v '^#' "$work/constraints.txt") | grep '^[<>]' || true
fi
mv "$work/constraints.txt" "$out"
echo "wrote $out ($(grep -vc '^#' "$out") pins)"
