#!/usr/bin/env bash
# memtools quickstart, offline: make the sample video, build its memory from recorded model
# answers (the narrator's speech is recognised for real by faster-whisper tiny.en), then look
# around with the tools an agent gets.
#
#   bash examples/quickstart.sh [MEMORY_DIR]        (default: sample-memory)
#
# It writes only MEMORY_DIR, MEMORY_DIR-week, MEMORY_DIR-show and examples/sample/sample.mp4 (by default all
# four ignored by git), so the checkout stays clean. The recognised words differ a little from CPU to CPU; the replay
# leaves them out of its keys and compares them by word error rate, so the memory is the same
# everywhere. examples/redraw_doc_picture.sh redraws the README's timeline picture from it.
#
# With a real model instead of the recording:
#   memtools build examples/sample/sample.mp4 --memory my-memory --vlm openai:gpt-4o-mini
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
MEMORY=${1:-sample-memory}

"$PYTHON" examples/make_sample_video.py
memtools build examples/sample/sample.mp4 --memory "$MEMORY" --replay examples/sample/responses.jsonl --fresh
echo "(The fixes above are on purpose: the sample's recording holds one deliberately malformed answer, as real"
echo " models give them - wrapped in a markdown fence, a loosely written label, an edge to an id that does not"
echo " exist - to show what a build repairs and what it leaves out. See examples/sample/record_responses.py.)"
echo
echo '$ memtools tool get_summary'
memtools tool get_summary --memory "$MEMORY"
echo
echo '$ memtools tool get_subgraph --macro-id sample/macro_0002'
memtools tool get_subgraph --memory "$MEMORY" --macro-id sample/macro_0002
echo
echo '$ memtools tool search_nodes --query "why did the boxes fall"'
memtools tool search_nodes --memory "$MEMORY" --query "why did the boxes fall" --top-k 3
echo
echo '$ memtools tool search_nodes --query "what did the narrator say about the boxes?" --node-types speech'
memtools tool search_nodes --memory "$MEMORY" --query "what did the narrator say about the boxes?" --node-types speech --top-k 2
echo
VOICES=0
"$PYTHON" -c "import sys; from memtools.speech.voice_weights import weights_path; sys.exit(weights_path() is None)" \
  && VOICES=1
echo '$ memtools tool get_transcript --start-sec 0 --end-sec 140'
[ "$VOICES" = 1 ] || echo '  (two voices speak: install the voice weights to tell them apart as S1 and S2: pip install --no-deps resemblyzer)'
memtools tool get_transcript --memory "$MEMORY" --start-sec 0 --end-sec 140
echo
echo '$ memtools tool get_entity_timeline --name ball'
memtools tool get_entity_timeline --memory "$MEMORY" --name ball
if [ "$VOICES" = 1 ]; then
  echo
  echo '$ memtools build examples/sample/sample.mp4 --video-id sample-again ...'
  echo '  (the sample again, standing for a second recording by the same two narrators)'
  memtools build examples/sample/sample.mp4 --memory "$MEMORY" --replay examples/sample/responses.jsonl \
    --video-id sample-again >/dev/null 2>&1
  echo '$ memtools label-person sample/S2 "Second narrator"   (naming a voice: the strongest evidence of who is who)'
  memtools label-person sample/S2 "Second narrator" --memory "$MEMORY"
  echo
  echo '$ memtools tool get_entity_timeline --name "Second narrator"   (one person, by voice, across both videos)'
  memtools tool get_entity_timeline --memory "$MEMORY" --name "Second narrator"
fi
echo
echo '$ memtools import-captions examples/sample/week.json --memory '"$MEMORY"'-week   (four days at home, with recording times)'
memtools import-captions examples/sample/week.json --memory "$MEMORY-week" 2>/dev/null
echo
echo '$ memtools tool get_event_chain --activity "make coffee"   (a question across days: when did I last make coffee?)'
memtools tool get_event_chain --memory "$MEMORY-week" --activity "make coffee"
echo
echo '$ memtools tool get_summary --video-id day/2026-11-19'
memtools tool get_summary --memory "$MEMORY-week" --video-id day/2026-11-19
echo
echo '$ memtools show   (open the index.html it names in a browser)'
memtools show --memory "$MEMORY" --out "$MEMORY-show" --quiet
