"""The server options of ``add_video`` (``memtools serve`` and ``memtools-mcp``), and the runner they make.

Without ``--allow-root`` or ``--allow-urls`` the server builds nothing and lists no build tools.
The model and build settings are ``memtools build``'s: ``--vlm``/``--replay``/``--base-url``/
``--api-key-env``/``--preset``, else the ``MEMTOOLS_*`` environment variables, else the ``[build]``
table of the ``--config`` file; the speech flags are ``memtools build``'s too (``--speech auto`` by
default: local faster-whisper when installed and the video has audio, speakers by voice).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memtools.errors import ConfigError
from memtools.speech.options import SPEECH_OPTIONS, add_speech_args


def add_job_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("adding videos from the client (add_video; off unless a source is allowed)")
    g.add_argument("--allow-root", action="append", default=[], type=Path, metavar="DIR",
                   help="let add_video build video files under DIR (repeatable); paths leading out of it ('..', "
                        "links) and device files are refused")
    g.add_argument("--allow-urls", action="store_true",
                   help="let add_video download http(s) URLs of public hosts (loopback, private and link-local "
                        "addresses are refused unless allowed by --allow-url-host)")
    g.add_argument("--allow-url-host", action="append", default=[], metavar="NAME",
                   help="with --allow-urls: also accept this host name even if it resolves to a private address")
    g.add_argument("--vlm", metavar="SPEC", help="the perception model builds use (as for memtools build)")
    g.add_argument("--base-url", metavar="URL", help="OpenAI-compatible server of --vlm")
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the model's API key")
    g.add_argument("--replay", metavar="FILE", help="answer from recorded responses (JSONL) instead of a model")
    g.add_argument("--preset", help="build preset: default, short or fast")
    g.add_argument("--max-cost", type=float, metavar="USD", help="stop a job before it could cost more (resumable)")
    g.add_argument("--max-cost-per-day", type=float, metavar="USD",
                   help="stop jobs before the day's (UTC) total could cost more")
    g.add_argument("--prices", type=Path, metavar="FILE",
                   help="price table (default $MEMTOOLS_PRICES, else prices.toml / prices.json in the memory)")
    g.add_argument("--max-queued-jobs", type=int, default=4, metavar="N",
                   help="unfinished jobs at most; more add_video calls are refused (HTTP: 503) (default 4)")
    add_speech_args(p, subtitles=False, title="speech of the videos add_video builds (as for memtools build)")


def wants_jobs(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "allow_root", None) or getattr(args, "allow_urls", False))


def job_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The runner's settings from parsed options, or None when no source is allowed."""
    if not wants_jobs(args):
        if getattr(args, "allow_url_host", None):
            raise ConfigError("--allow-url-host needs --allow-urls")
        return None
    for name in ("max_cost", "max_cost_per_day"):
        value = getattr(args, name, None)
        if value is not None and value <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be positive")
    if args.max_queued_jobs < 1:
        raise ConfigError("--max-queued-jobs must be at least 1")
    for root in args.allow_root:
        if not root.expanduser().is_dir():
            raise ConfigError(f"--allow-root {root}: no such folder")
    return {"roots": [r.expanduser().resolve() for r in args.allow_root], "allow_urls": args.allow_urls,
            "url_hosts": tuple(args.allow_url_host), "max_cost": args.max_cost,
            "max_cost_per_day": args.max_cost_per_day, "prices": args.prices, "max_queued": args.max_queued_jobs,
            "flags": {"vlm": args.vlm, "base_url": args.base_url, "api_key_env": args.api_key_env,
                      "replay": args.replay, "preset": args.preset,
                      "config": _build_table_file(getattr(args, "search_config", None))},
            "speech": {name: getattr(args, name) for name in SPEECH_OPTIONS}}


def _build_table_file(path: str | None) -> str | None:
    """The ``--config`` file when it has a ``[build]`` table (a file of ``[search]`` only has no build settings)."""
    if path is None:
        return None
    from memtools.builder.settings import load_config_file

    return path if "search" not in load_config_file(path) else None


def make_runner(memory: Any, options: dict[str, Any]) -> Any:
    """The ``JobRunner`` of ``job_options`` over an open ``Memory`` (started by the caller)."""
    from memtools.builder.settings import resolve_settings
    from memtools.costs import PriceTable
    from memtools.jobs import JobLimits, JobRunner, SourcePolicy

    settings = resolve_settings(options["flags"])
    policy = SourcePolicy(roots=tuple(options["roots"]), allow_urls=options["allow_urls"],
                          url_hosts=options["url_hosts"])
    limits = JobLimits(max_queued=options["max_queued"], max_cost_job=options["max_cost"],
                       max_cost_day=options["max_cost_per_day"],
                       prices=PriceTable.load(memory.path, options["prices"]))
    from memtools.speech.options import speech_factory

    speech = speech_factory(options["speech"]) if "speech" in options else None
    return JobRunner(memory, settings, policy, limits=limits, speech=speech)
