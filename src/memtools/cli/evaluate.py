"""``memtools eval``: run the ORA agent over an LVBench-style question file and score it."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from memtools.cli.ask import add_model_args, build_graph
from memtools.cli.common import add_memory_arg, open_memory
from memtools.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="score the ORA agent on a multiple-choice question file (LVBench layout)",
                       description="Answer every question of an LVBench-layout JSONL file (one line per video: "
                                   "key, qa[] with uid, question, answer, question_type) and report accuracy "
                                   "overall and per question type. One trajectory JSON per question; rerunning "
                                   "skips questions that already have one.")
    add_memory_arg(p)
    p.add_argument("--questions", type=Path, required=True, metavar="FILE.jsonl", help="the question file")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="where trajectories and summary.json go (default: eval-<questions file name>)")
    p.add_argument("--concurrency", type=int, default=4, metavar="N", help="questions run at once (4)")
    p.add_argument("--video-map", type=Path, default=None, metavar="FILE.json",
                   help="JSON object mapping question-file keys to memory video ids (default: the same id)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N questions")
    p.add_argument("--trace", action="store_true",
                   help="also draw each new question's run as OUT/traces/<video>/<uid>.html (see memtools ask --trace)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_model_args(p)
    p.set_defaults(func=run)


def _video_map(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read --video-map {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"--video-map {path} must hold a JSON object {{key: video_id}}")
    return {str(k): str(v) for k, v in data.items()}


def trace_path(out: Path, record: dict) -> Path:
    """OUT/traces/<video key>/<uid>.html, beside the trajectories."""
    def safe(name) -> str:
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("._") or "_"

    return out / "traces" / safe(record.get("video_key")) / f"{safe(record.get('uid'))}.html"


class _Reaching:
    """The ORA graph, with a model that cannot be used at all (unreachable, key refused) raised as one
    ``ConfigError`` line, which ends the run (every other question would fail the same way)."""

    def __init__(self, graph, spec: str, base_url: str | None) -> None:
        self.graph, self.spec, self.base_url = graph, spec, base_url

    def invoke(self, *args, **kwargs):
        from memtools.chat_models import reaching_model

        with reaching_model(self.spec, self.base_url):
            return self.graph.invoke(*args, **kwargs)


def _pct(correct: int, n: int) -> str:
    return f"{100 * correct / n:5.1f}% ({correct}/{n})" if n else "  n/a"


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from memtools.agent.evaluation import load_questions, run_eval, trajectory_path
    from memtools.agent.trajectory import format_tokens, tokens_total
    from memtools.show.trace import write_trace
    from memtools.tools import MemoryTools

    if args.concurrency < 1:
        raise ConfigError("--concurrency must be at least 1")
    questions = load_questions(args.questions)[: args.limit]
    out = args.out or Path(f"eval-{args.questions.stem}")
    total = len(questions)
    done, right = [0], [0]

    resumed = sum(trajectory_path(out, q).exists() for q in questions)
    with open_memory(args.memory) as memory, tqdm(total=total, initial=resumed, desc="eval", unit="question",
                                                  file=sys.stderr, disable=args.quiet) as bar:
        tools = MemoryTools(memory)

        def progress(record: dict) -> None:
            done[0] += 1
            right[0] += bool(record["correct"])
            mark = "ok " if record["correct"] else "bad"
            bar.write(f"[{done[0]}] {mark} {record['uid']}: answer {record['answer']} gold {record['gold']} "
                      f"({record['status']}, {record['rounds']} rounds, tokens {format_tokens(record['tokens'])})",
                      file=sys.stderr)
            if args.trace:
                write_trace(trace_path(out, record), record, tools)
            bar.update(1)
            bar.set_postfix_str(f"accuracy {100 * right[0] / done[0]:.0f}% of new")

        graph = _Reaching(build_graph(args, memory), args.model, args.base_url)
        result = run_eval(graph, questions, out, video_ids=memory.video_ids(), video_map=_video_map(args.video_map),
                          concurrency=args.concurrency, on_done=progress)
    s = result.summary()
    print(f"Accuracy: {_pct(s['correct'], s['n'])} of {total} questions "
          f"(answered {s['answered']}, forced {s['forced']}, no answer {s['no_answer']}; "
          f"resumed {s['resumed']}, errors {s['errors']}, skipped {s['skipped']}; mean rounds {s['mean_rounds']:.2f})")
    tokens = [r["tokens"] for r in result.records if r.get("tokens")]  # older trajectories have none
    if tokens:
        print(f"Tokens: {format_tokens(tokens_total(tokens))} over {len(tokens)} question(s) "
              f"(per question and per round in each trajectory's tokens / tokens_per_round)")
    if s["per_type"]:
        print("Per question type:")
        width = max(len(t) for t in s["per_type"])
        for t, b in s["per_type"].items():
            print(f"  {t:<{width}}  {_pct(b['correct'], b['n'])}")
    for uid, why in list(result.errors.items())[:10]:
        print(f"error {uid}: {why}", file=sys.stderr)
    for uid, why in list(result.skipped.items())[:10]:
        print(f"skipped {uid}: {why}", file=sys.stderr)
    print(f"Trajectories: {out / 'trajectories'}; summary: {out / 'summary.json'}")
    return 1 if result.errors else 0
