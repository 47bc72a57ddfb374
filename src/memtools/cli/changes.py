"""``memtools note | rename-entity | merge-entities | split-entity | forget | label-person | forget-person | log |
undo``: correct and forget.

Each change is recorded in the memory's change log with the CLI as its front end, and can be undone
(``memtools undo CHANGE_ID``; undoing an undo redoes). See docs/writing.md.
"""

from __future__ import annotations

import argparse

from memtools.cli.common import add_memory_arg, open_memory

UNDO_HINT = "(undo it with `memtools undo {cid}`)"
LOG_LIMIT = 10_000
"""The most changes `memtools log` shows at once."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("note", help="attach a note (a statement of yours) to a moment, an entity or a video",
                       description="Attach a note to a moment (VIDEO@SECONDS or VIDEO@M:SS), an entity id or a "
                                   "video id. It is found by search and marked as yours.")
    add_memory_arg(p)
    p.add_argument("about", help="kitchen@125, kitchen@2:05, kitchen/entity_003 or kitchen")
    p.add_argument("text", help="the statement to remember")
    p.set_defaults(func=_note)

    p = sub.add_parser("rename-entity", help="correct an entity's name")
    add_memory_arg(p)
    p.add_argument("entity_id")
    p.add_argument("name")
    p.set_defaults(func=_rename)

    p = sub.add_parser("merge-entities", help="make two entities of one video one (OTHER joins ENTITY)")
    add_memory_arg(p)
    p.add_argument("entity_id")
    p.add_argument("other_id")
    p.set_defaults(func=_merge)

    p = sub.add_parser("split-entity", help="split mentions off an entity that is really two")
    add_memory_arg(p)
    p.add_argument("entity_id")
    p.add_argument("mention_ids", nargs="+", help="the mentions (from get_entity_timeline) to split off")
    p.add_argument("--name", default=None, help="the split-off entity's name")
    p.set_defaults(func=_split)

    p = sub.add_parser("forget", help="remove a video from the memory (undoable; --purge: for good)")
    add_memory_arg(p)
    p.add_argument("video_id")
    p.add_argument("--purge", action="store_true", help=(
        "remove the video from every file of the memory folder for good, the change log's copies of it included "
        "(also a video forgotten before); cannot be undone. Prints a JSON receipt of what was removed"))
    p.set_defaults(func=_forget)

    p = sub.add_parser("label-person", help="name a voice or face cluster, or a person (named by you: the "
                                            "strongest evidence)")
    add_memory_arg(p)
    p.add_argument("target", help="a cluster VIDEO/S1 (voice) or VIDEO/F1 (face), or a person lib/person_0001")
    p.add_argument("name")
    p.set_defaults(func=_label_person)

    p = sub.add_parser("forget-person", help="delete the voice and face vectors of a person (cannot be undone)")
    add_memory_arg(p)
    p.add_argument("target", help="a person lib/person_0001, or one cluster VIDEO/S1 or VIDEO/F1")
    p.add_argument("--purge", action="store_true", help=(
        "also write the memory's files again so that no byte of the vectors is left in them, and print a JSON "
        "receipt"))
    p.set_defaults(func=_forget_person)

    p = sub.add_parser("log", help="the memory's change log: id, when, who, through which front end, what",
                       description="The memory's change log, newest first: one line per change (id, when, who via "
                                   "which front end, action: summary). Who and what are shown as data: a control "
                                   "character or line break in them is escaped (\\n, \\x1b, \\u2028), who is cut "
                                   "at 200 characters and what at 500 (with \u2026).")
    add_memory_arg(p)
    p.add_argument("--limit", type=int, default=50, help="show the newest N changes (default 50, at most 10000)")
    p.add_argument("--video", default=None, help="only changes to this video")
    p.add_argument("--json", action="store_true", help=(
        "JSON Lines: one JSON object per change, newest first, with the keys id, at (Unix time), when, who, "
        "front_end, action, summary, video_id, state (done, pending or abandoned), undoes and undone_by (a change "
        "id or null); nothing else goes to standard output (the notice of videos not in the memory goes to "
        "standard error)"))
    from memtools.cli.reads import READS_HELP

    p.add_argument("--reads", action="store_true", help=READS_HELP)
    p.set_defaults(func=_log)

    p = sub.add_parser("undo", help="undo one change (undoing an undo redoes it)")
    add_memory_arg(p)
    p.add_argument("change_id", help="a change id from `memtools log`, e.g. c0007")
    p.set_defaults(func=_undo)


def _run(args: argparse.Namespace, action) -> int:
    from memtools.tools.caller import acting_as, owner

    with open_memory(args.memory) as memory, acting_as(owner("cli")):
        applied = action(memory)
    ids = applied.ids.line()  # the entity ids to use now, when the change moved or made some
    print(f"{applied.change_id}: {applied.summary} " + UNDO_HINT.format(cid=applied.change_id)
          + (f" {ids}" if ids else ""))
    return 0


def _note(args: argparse.Namespace) -> int:
    from memtools.changes import add_note

    return _run(args, lambda m: add_note(m, args.about, args.text))


def _rename(args: argparse.Namespace) -> int:
    from memtools.changes import rename_entity

    return _run(args, lambda m: rename_entity(m, args.entity_id, args.name))


def _merge(args: argparse.Namespace) -> int:
    from memtools.changes import merge_entities

    return _run(args, lambda m: merge_entities(m, args.entity_id, args.other_id))


def _split(args: argparse.Namespace) -> int:
    from memtools.changes import split_entity

    return _run(args, lambda m: split_entity(m, args.entity_id, args.mention_ids, args.name))


def _forget(args: argparse.Namespace) -> int:
    from memtools.changes import forget_video

    if not args.purge:
        return _run(args, lambda m: forget_video(m, args.video_id))
    return _purged(args, lambda m: forget_video(m, args.video_id, purge=True))


def _purged(args: argparse.Namespace, action) -> int:
    """A purge: one line, then its JSON receipt (``memtools.changes.purge``)."""
    import json

    from memtools.tools.caller import acting_as, owner

    with open_memory(args.memory) as memory, acting_as(owner("cli")):
        applied = action(memory)
    print(f"{applied.change_id}: {applied.summary} (this cannot be undone; receipt: purges/{applied.change_id}.json)")
    print(json.dumps(applied.receipt, indent=1, ensure_ascii=True))
    return 0


def _label_person(args: argparse.Namespace) -> int:
    from memtools.changes import label_person

    return _run(args, lambda m: label_person(m, args.target, args.name))


def _forget_person(args: argparse.Namespace) -> int:
    from memtools.changes import forget_person
    from memtools.tools.caller import acting_as, owner

    if args.purge:
        return _purged(args, lambda m: forget_person(m, args.target, purge=True))

    with open_memory(args.memory) as memory, acting_as(owner("cli")):
        applied = forget_person(memory, args.target)
    print(f"{applied.change_id}: {applied.summary}")
    return 0


def _undo(args: argparse.Namespace) -> int:
    from memtools.changes import undo_change

    return _run(args, lambda m: undo_change(m, args.change_id))


def _log(args: argparse.Namespace) -> int:
    import json
    import sys

    from memtools.changes import change_log

    if args.reads:  # the audit of reads (memtools serve --audit-reads)
        from memtools.cli.reads import print_reads

        return print_reads(args, min(max(1, args.limit), LOG_LIMIT))
    with open_memory(args.memory) as memory:
        entries = change_log(memory, min(max(1, args.limit), LOG_LIMIT), args.video)
    if args.json:
        for change in entries:
            print(json.dumps(change.record(), ensure_ascii=True))
    else:
        if not entries:
            print("No changes recorded in this memory yet.")
        for change in entries:
            print(change.line())
    from memtools.store.catalog.owed import notice

    if (text := notice(memory.path)) is not None:
        print(f"Not in the memory: {text}", file=sys.stderr if args.json else sys.stdout)
    return 0
