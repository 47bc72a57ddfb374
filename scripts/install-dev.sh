#!/usr/bin/env bash
# The README's install, for the active Python (a virtual environment): memtools from this checkout with the
# [dev] extra at the tested pins, then the voice encoder's weights, so the quickstart tells its two narrators
# apart (S1, S2) and follows one into a second video.
#
#   bash scripts/install-dev.sh [pip options, e.g. --quiet]
#
# The weights ship in Resemblyzer's wheel (Apache-2.0, 17 MB, pure Python). It is installed alone (--no-deps):
# it declares torch, librosa (numba, llvmlite), webrtcvad (a C extension built from source, which needs a
# compiler) and the `typing` backport, none of which memtools uses (it runs the encoder on numpy and reads the
# weights without importing resemblyzer), so no extra of pyproject.toml can bring it without them. .ci/run
# installs with this script too.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install "$@" -c constraints.txt -e ".[dev]"
python -m pip install "$@" --no-deps -c constraints.txt resemblyzer
python -c "from memtools.speech.voice_weights import weights_path; assert weights_path(), 'no voice weights'"
