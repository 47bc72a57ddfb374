"""``memtools retention``: a memory's retention policy (videos older than N days are purged): set, show, preview,
apply (``memtools.changes.retention``; the server applies it once a day)."""

from __future__ import annotations

import argparse
from pathlib import Path

from memtools.arg_types import positive_int
from memtools.cli.common import add_memory_arg, open_memory


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retention", help="keep videos N days: set, show, preview (--dry-run) or apply (--apply) the policy",
        description="A memory's retention policy: videos recorded (or, without a recording time, added) more than "
                    "N days ago are purged for good (memtools forget --purge: no copy kept, no undo), with the "
                    "reads audit log's lines older than N days. `--keep-days N` stores the policy in the "
                    "memory's retention.json (a memory without one takes retention_days from the --config file); "
                    "`memtools serve` applies it at start and once a day, `--apply` now (one purge, its receipt "
                    "printed), `--dry-run` lists what would go; `--off` turns it off. Without an option: the "
                    "policy.")
    add_memory_arg(p)
    p.add_argument("--keep-days", type=positive_int, metavar="N", default=None,
                   help="store the policy: keep videos N days (with --dry-run: preview N days, store nothing)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--show", action="store_true", help="print the policy (the default)")
    what.add_argument("--off", action="store_true", help="turn the policy off (whatever a config file says)")
    what.add_argument("--apply", action="store_true", help="purge the videos older than the policy now")
    what.add_argument("--dry-run", action="store_true", help="list the videos the policy would purge now, with "
                                                             "their recording (or added) dates; changes nothing")
    p.add_argument("--config", type=Path, metavar="FILE", default=None, dest="retention_config",
                   help="settings file (memtools.toml) whose top-level retention_days applies to a memory without "
                        "its own policy")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.changes.retention import Policy, apply, read_policy, set_policy
    from memtools.errors import ConfigError
    from memtools.tools.caller import acting_as, owner

    if args.keep_days is not None and (args.off or args.show):
        raise ConfigError(f"--keep-days with {'--off' if args.off else '--show'}: give one of them")
    with open_memory(args.memory) as memory:
        if args.keep_days is not None and not args.dry_run:
            set_policy(memory.path, args.keep_days)
        elif args.off:
            set_policy(memory.path, None)
        policy = (Policy(args.keep_days, "--keep-days, not stored") if args.dry_run and args.keep_days is not None
                  else read_policy(memory.path, args.retention_config))
        if args.dry_run:
            print(_preview(memory, policy))
        elif args.apply:
            with acting_as(owner("cli")):
                print(apply(memory, policy).render())
        else:
            print(policy.line())
    return 0


def _preview(memory, policy) -> str:
    from datetime import datetime, timedelta, timezone

    from memtools.changes.retention import READS_FILE, due, prune_reads

    if policy.keep_days is None:
        return f"{policy.line()} Nothing would be purged."
    now = datetime.now(timezone.utc)
    videos = due(memory, policy.keep_days, now)
    reads = prune_reads(memory.path, now - timedelta(days=policy.keep_days), dry_run=True)
    lines = [policy.line()]
    lines += ([f"{len(videos)} video(s) would be purged now (oldest first):"] + [f"  {d.line()}" for d in videos]
              if videos else ["No video is older than that: none would be purged now."])
    if reads:
        lines.append(f"{reads} line(s) of {READS_FILE} would be dropped.")
    lines.append("Nothing was changed (--dry-run); `memtools retention --apply` does it.")
    return "\n".join(lines)
