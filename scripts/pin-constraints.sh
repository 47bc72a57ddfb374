#!/usr/bin/env bash
# Regenerate constraints.txt: the exact versions of memtools[dev]'s whole dependency tree,
# resolved from scratch in a throwaway virtual environment (so nothing else installed on this
# machine leaks in). CPU torch stays pinned at TORCH. Review the diff, then run .ci/run.
#
#   scripts/pin-constraints.sh            # writes constraints.txt
#   scripts/pin-constraints.sh OUT.txt    # writes OUT.txt instead
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH="torch==2.13.0"
out="${1:-constraints.txt}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
pip="$work/venv/bin/python -m pip"
$pip install --quiet --upgrade pip
echo "$TORCH" > "$work/torch.txt"
$pip install --quiet -c "$work/torch.txt" -e ".[dev]"
{
  echo "# The tested versions of memtools[dev]'s whole dependency tree; .ci/run installs with -c constraints.txt."
  echo "# Regenerate with scripts/pin-constraints.sh (a fresh venv, then pip freeze without memtools itself)."
  echo "# Optional extras that are not part of [dev] (e.g. ladybug) stay unpinned and still resolve."
  $pip freeze --exclude-editable | grep -viE '^(memtools|pip|setuptools|wheel)==' \
    | sed -E 's/^torch==.*/'"$TORCH"'/' | LC_ALL=C sort -f
} > "$work/constraints.txt"
mv "$work/constraints.txt" "$out"
echo "wrote $out ($(grep -vc '^#' "$out") pins)"
