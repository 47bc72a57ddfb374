#!/usr/bin/env bash
# Redraw docs/sample-timeline.png, the README's picture of the sample's timeline, for maintainers
# who changed how `memtools show` draws. The quickstart never touches tracked files; this does.
#
#   bash examples/redraw_doc_picture.sh [MEMORY_DIR]   (default: sample-memory, built by the quickstart
#                                                       when it is not there yet)
set -euo pipefail
cd "$(dirname "$0")/.."
MEMORY=${1:-sample-memory}
if [ ! -f "$MEMORY/memtools.json" ]; then
    bash examples/quickstart.sh "$MEMORY" >/dev/null
fi
memtools show --memory "$MEMORY" --out "$MEMORY-show" --quiet
cp "$MEMORY-show/timeline-sample.png" docs/sample-timeline.png
echo "redrew docs/sample-timeline.png from $MEMORY: look at it, then commit it"
