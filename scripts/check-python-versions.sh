#!/usr/bin/env bash
# Every Python that pyproject.toml's classifiers name ("Programming Language :: Python :: 3.X"), tested:
# for each, scripts/check-base-install.sh in a fresh venv made by that interpreter (the base install,
# import, a caption import + search with the test embedder, the MCP server over stdio, the clear
# error without weights). The full test suite runs on one version (.ci/run's python3).
#
# Each 3.X is looked for as python3.X on PATH, then under pyenv ($(pyenv root)/versions/3.X.*, the
# newest patch release). A declared version that is not on this machine fails the check before
# anything is installed: install it (pyenv install 3.X) or stop declaring it.
#
#   scripts/check-python-versions.sh            # every declared version, one after the other
#   scripts/check-python-versions.sh 3.10 3.13  # only these (each must be declared)
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check-python-versions: FAIL: $*" >&2; exit 1; }

declared=$(grep -oE '"Programming Language :: Python :: 3\.[0-9]+"' pyproject.toml | grep -oE '3\.[0-9]+' || true)
[ -n "$declared" ] || fail "pyproject.toml's classifiers name no Python 3.X version"
wanted="${*:-$declared}"
for v in $wanted; do
    grep -qx "$v" <<<"$declared" || fail "Python $v is not declared in pyproject.toml's classifiers ($(echo $declared))"
done

pyenv_root=$( (command -v pyenv >/dev/null && pyenv root) || echo "${PYENV_ROOT:-$HOME/.pyenv}")

# The interpreter for 3.X that really runs as 3.X (a pyenv shim for a version not selected does not).
find_python() {
    local v="$1" candidate
    for candidate in "$(command -v "python$v" || true)" \
        $(ls -d "$pyenv_root/versions/$v".*/bin/"python$v" 2>/dev/null | sort -V -r); do
        [ -n "$candidate" ] || continue
        if [ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$v" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

declare -A python
missing=()
for v in $wanted; do
    python[$v]=$(find_python "$v") || missing+=("$v")
done
[ ${#missing[@]} -eq 0 ] || fail "pyproject.toml declares Python ${missing[*]}, not found on this machine" \
    "(as python3.X on PATH or under $pyenv_root/versions): install it (pyenv install 3.X) or drop its classifier"

summary=()
for v in $wanted; do
    echo "check-python-versions: Python $v (${python[$v]})"
    start=$(date +%s)
    scripts/check-base-install.sh --python "${python[$v]}" || fail "Python $v: the base install check failed (above)"
    summary+=("$v: $(( $(date +%s) - start )) s")
done
echo "check-python-versions: OK (${summary[*]})"
