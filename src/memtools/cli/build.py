"""``memtools build VIDEO... --memory DIR``: videos -> hierarchical graph memory with a vision model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtools.cli.common import add_embedder_arg, add_memory_arg, add_tables_arg, create_memory, use_image_embedder
from memtools.cli.costs import add_budget_arguments
from memtools.cli.fleet import add_fleet_args, run_fleet, wants_fleet
from memtools.cli.follow import add_follow_args, run_follow
from memtools.cli.time_args import add_time_args, check_starts, recording_rule, timed_memory
from memtools.errors import BuildError, PerceptionError, SpeechError
from memtools.speech.options import add_speech_args, recognizers, speaker_encoder

EPILOG = """\
backends:
  --vlm openai:gpt-4o-mini                                   OpenAI (OPENAI_API_KEY)
  --vlm openai:Qwen2.5-VL-7B --base-url http://localhost:8000/v1   vLLM, Ollama, LM Studio, OpenRouter...
  --vlm local:Qwen/Qwen2.5-VL-3B-Instruct                    transformers on your GPU
  --replay answers.jsonl                                      recorded answers (offline)
  --vlm python:mypkg.backends:make_vlm                        any object with async complete(request)

speech (what is said goes into the prompts and the memory):
  --speech auto                 local faster-whisper if installed and the video has audio (default)
  --speech local --speech-model /models/whisper-small-ct2 --speech-threads 4
  --speech openai --speech-base-url http://localhost:8000/v1 --speech-model whisper-1
  --subtitles talk.srt          use existing SRT/WebVTT subtitles instead of recognising

Every flag can also come from --config memtools.toml ([build] table) or MEMTOOLS_* environment
variables (MEMTOOLS_VLM, MEMTOOLS_BASE_URL, MEMTOOLS_API_KEY_ENV, MEMTOOLS_CONCURRENCY, ...).
An interrupted build resumes where it stopped when the same command runs again.

a live stream (macro events land as each window closes; Ctrl-C lands what was seen):
  memtools build --follow rtsp://cam/stream --memory lib/ --video-id cam1 --keyframe-cap-mb 500 ...
  memtools build --follow recordings/ --memory lib/ ...      a folder receiving segment_000.mp4, ...

many videos:
  memtools build --from-list videos.txt --memory lib/ ...     several videos at once, in this process
  memtools build --ray --address auto --from-list videos.txt --memory lib/ --tables s3://bucket/lib ...
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build a memory from video files with a vision-language model",
                       description="Segment, describe and summarise videos into a hierarchical graph memory.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("videos", nargs="*", type=Path, metavar="VIDEO", help="video files")
    add_memory_arg(p)
    add_embedder_arg(p)
    add_tables_arg(p)
    model = p.add_argument_group("perception model")
    model.add_argument("--vlm", metavar="SPEC", help="openai:MODEL, local:MODEL or python:MODULE:NAME")
    model.add_argument("--base-url", metavar="URL", help="OpenAI-compatible server (default: OpenAI)")
    model.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    model.add_argument("--replay", metavar="FILE", help="answer from recorded responses (JSONL) instead of a model")
    model.add_argument("--record", metavar="FILE", help="append every model answer to this JSONL file")
    tuning = p.add_argument_group("pipeline")
    tuning.add_argument("--config", type=Path, metavar="FILE", help="settings file (TOML, or JSON)")
    tuning.add_argument("--preset", help="build preset: default, short (clips of minutes) or fast")
    tuning.add_argument("--concurrency", type=int, metavar="N", help="model calls in flight (default 4)")
    tuning.add_argument("--window-sec", type=float, metavar="SEC", help="segmentation window tau (default 600)")
    add_speech_args(p)
    p.add_argument("--faces", action="store_true",
                   help="find, track and cluster the faces on the keyframes (F1, F2, ... per video, kept in faces/); "
                        "off by default: faces are biometric data (docs/faces.md). Needs pip install 'memtools[faces]'")
    add_time_args(p)
    p.add_argument("--video-id", help="id for the video (single video only; default: from the file name)")
    p.add_argument("--fresh", action="store_true", help="ignore checkpoints of earlier runs and start over")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    p.add_argument("--estimate", action="store_true",
                   help="print the model calls, tokens, images, cost and wall time the build would take, "
                        "without calling a model or touching the memory")
    add_budget_arguments(p)
    add_fleet_args(p)
    add_follow_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.builder import TextProgress, abuild_videos
    from memtools.builder.budget import BudgetExceeded, spending_limit
    from memtools.builder.pipeline import resolve_video_id
    from memtools.builder.settings import resolve_settings, vlm_from_settings
    from memtools.cli.costs import budget_from_args
    from memtools.costs import PriceTable
    from memtools.perception.replay import ReplayMiss
    from memtools.video import probe

    if args.video_id and len(args.videos) > 1:
        raise BuildError("--video-id names one video; build the others with their own command")
    if args.faces and (wants_fleet(args) or args.follow):
        raise BuildError("--faces works on one build command's videos: build without --from-list/--ray/--follow, "
                         f"or add the faces afterwards with memtools repair --faces --memory {args.memory}")
    faces = None
    if args.faces:  # without the faces extra, says how to install it before anything else (dlib is imported here)
        from memtools.faces.models import DlibFaces

        faces = DlibFaces()
    settings = resolve_settings({
        "vlm": args.vlm, "base_url": args.base_url, "api_key_env": args.api_key_env, "replay": args.replay,
        "record": args.record, "embedder": args.embedder, "preset": args.preset, "config": args.config,
        "concurrency": args.concurrency, "window_sec": args.window_sec,
    })
    if wants_fleet(args):
        if getattr(args, "max_cost", None) is not None or getattr(args, "max_tokens", None) is not None:
            raise BuildError("fleet builds (--from-list, --ray) do not take --max-cost/--max-tokens yet: limit "
                             "concurrency with --endpoint-limit, or build with a budget one command at a time")
        if args.speech not in ("auto", "none") or args.subtitles:
            raise BuildError("fleet builds (--from-list, --ray) do not recognise speech yet: build videos with "
                             "--speech/--subtitles one command each, or pass --speech none")
        if args.speech == "auto":
            print("note: fleet builds do not recognise speech yet; the videos are built from their frames "
                  "(pass --speech none to silence this)", file=sys.stderr)
        return run_fleet(args, settings, timed_memory(create_memory, recording_rule(args, 2)))
    if args.follow:
        return run_follow(args, settings, vlm_from_settings(settings), timed_memory(create_memory,
                          recording_rule(args, 1)), use_image_embedder)
    if not args.videos:
        raise BuildError("no videos: name video files, or a list of them with --from-list FILE")
    if args.estimate:
        return print_estimate(args, settings)
    vlm = vlm_from_settings(settings)
    rule = recording_rule(args, len(args.videos))
    infos = [probe(path) for path in args.videos]  # an unreadable file fails before the memory is touched
    check_starts(rule, args.videos, [i.duration for i in infos],
                 [resolve_video_id(path, args.video_id) for path in args.videos])  # so does a bad sidecar
    speech = recognizers(args, args.videos)  # so does a bad subtitle file or a missing speech extra
    speakers = speaker_encoder(args, speech)  # and --speakers on without the voice weights
    sink = None if args.quiet else TextProgress(sys.stderr, prices=PriceTable.load(args.memory, args.prices),
                                                model=getattr(vlm, "model_name", ""))  # running cost, if priced
    with use_image_embedder(create_memory(args.memory, settings.embedder, args.tables,
                                          args.graph_engine), args) as memory:
        memory.recording_rule = rule
        budget = budget_from_args(args, memory.path, getattr(vlm, "model_name", ""))
        import asyncio  # here: every memtools command builds this parser, few build

        try:
            with spending_limit(budget):
                summary = asyncio.run(abuild_videos(
                    memory, vlm, args.videos, video_ids=[args.video_id] if args.video_id else None,
                    config=settings.config, sink=sink, fresh=args.fresh, infos=infos, speech=speech,
                    speakers=speakers, faces=faces))
        except BudgetExceeded as exc:
            raise BudgetExceeded(f"{exc}\nFinished steps are checkpointed: run the same command again (with a larger "
                                 "budget) to resume.") from exc
        except ReplayMiss:
            raise  # its message says what to do; resuming would ask the same question
        except (PerceptionError, SpeechError) as exc:
            raise type(exc)(f"{exc}\nFinished steps are checkpointed: run the same command again to resume."
                            ) from exc
        reports = [str(memory.work_dir(v.video_id) / "report.json") for v in summary.videos if not v.skipped]
        print(summary.render(str(args.memory), reports))
        if budget is not None:
            print(f"Model calls of this run: {budget.summary()}")
    return 0


def print_estimate(args: argparse.Namespace, settings) -> int:
    """``--estimate``: the build's plan priced, from the probed videos; no model, no memory written."""
    from memtools.builder.estimate import estimate_build, model_name
    from memtools.builder.vocabulary import has_library
    from memtools.costs import PriceTable
    from memtools.video import probe

    infos = [probe(path) for path in args.videos]
    model = model_name(settings)
    estimate = estimate_build(infos, settings.config, model=model, prices=PriceTable.load(args.memory, args.prices),
                              library=has_library(args.memory))
    print(estimate.render())
    return 0
