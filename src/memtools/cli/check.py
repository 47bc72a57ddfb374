"""``memtools check`` and ``memtools repair``: is a memory whole, and rebuild what can be derived."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtools.cli.common import add_memory_arg, open_memory
from memtools.cli.time_args import add_time_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="check that the manifest, graph and vectors of a memory agree",
        description="Compare the manifest, the graph, the lance tables and the keyframe files of a memory: "
                    "every searchable node has its row and vector, every row its node, counts per video, the "
                    "entities and keyframes tables, the embedder's dimension, every index and its files, the "
                    "navigation rows, the library layer (library.sqlite: its tables, and that they agree with each "
                    "other and with the entities table), every keyframe image (decoded), videos whose build failed, "
                    "catalog values no video can have. Changes nothing. "
                    "Exit status: 0 when the memory is whole, 1 when it is damaged (the report says what "
                    "`memtools repair` fixes), 3 when a killed writer left a write half-done (run `memtools "
                    "recover`, then check again).")
    add_memory_arg(p)
    p.add_argument("--deep", action="store_true",
                   help="also read every video back from the graph and compare each row of the derived files "
                        "(library.sqlite, navigation.sqlite) with what it gives: finds rows edited in place; "
                        "about 4 ms a video (memtools repair always does this)")
    p.set_defaults(func=run_check)
    p = sub.add_parser(
        "recover", help="finish or undo a write that a killed process left half-done",
        description="As the next writer would: finish a write whose data the graph holds exactly as its journal "
                    "records, else undo it in every part (the same command then writes it again), and let the graph "
                    "engine finish a commit it was killed in. Any write, and any command that opens the memory with "
                    "write access, does this first; this command does only that. Exit status: 0 when nothing is left "
                    "half-done afterwards.")
    add_memory_arg(p)
    p.set_defaults(func=run_recover)
    p = sub.add_parser(
        "repair", help="rebuild what a damaged memory can derive (vectors, indexes, manifest entries)",
        description="Rebuild the lance rows, vectors, entity profiles and indexes from the graph (whole tables "
                    "aside, checked, then swapped in), put videos the graph holds back into the manifest, recount, "
                    "mend a manifest whose embedder dimension the embedder and the vectors contradict, and remove "
                    "leftovers of interrupted writes and frames of unknown videos, compare the derived files "
                    "(library.sqlite, navigation.sqlite) row by row with the graph and compute again any that differ "
                    "(a damaged file is set aside as NAME.damaged), and make the day and week layer "
                    "again (reading missing recording times from the videos' files). A failed repair puts everything "
                    "back; one that cannot tell what is right refuses and changes nothing. A lost graph cannot be "
                    "derived: the report says how to rebuild or re-import those videos. Exit status: 0 when the "
                    "memory is whole afterwards, 1 otherwise.")
    add_memory_arg(p)
    p.add_argument("--forget-lost", action="store_true",
                   help="mark videos the graph lost as 'lost' (dropping their vectors; an unreadable graph file is "
                        "kept aside) and drop videos whose build failed from the list, so the rest can be used and "
                        "they can be imported again")
    p.add_argument("--speakers", action="store_true",
                   help="then label who speaks (S1, S2, ... by voice) in videos whose speech names nobody, from "
                        "their source files (needs the voice weights: pip install --no-deps resemblyzer)")
    p.add_argument("--faces", action="store_true",
                   help="then find and cluster the faces on every video's stored keyframes (faces/<video>.json; "
                        "biometric data, see docs/faces.md; needs pip install 'memtools[faces]')")
    add_time_args(p, flag=False)
    p.set_defaults(func=run_repair)


def run_check(args: argparse.Namespace) -> int:
    from memtools.store.integrity.checker import check

    with open_memory(args.memory, recover=False) as memory:
        report = check(memory, deep=args.deep)
    print(report.render())
    _say_owed(args.memory)
    return 0 if report.ok else 3 if report.pending else 1


def _say_owed(folder: str) -> None:
    """Videos a recovery had to remove (``memtools.store.catalog.owed``): named until written again."""
    from memtools.store.catalog.owed import notice

    if (text := notice(Path(folder))) is not None:
        print(f"NOT IN THE MEMORY: {text}")


def run_recover(args: argparse.Namespace) -> int:
    with open_memory(args.memory, recover=False) as memory:
        done = memory.finish_recovery()
    print(f"Recovered {args.memory}: {done}." if done else f"Nothing to recover in {args.memory}: no write was left "
          "half-done.")
    print(f"Next: memtools check --memory {args.memory}")
    return 0


def run_repair(args: argparse.Namespace) -> int:
    from memtools.cli.time_args import recording_rule
    from memtools.store.integrity.repair import repair

    encoder = None
    if args.speakers:
        from memtools.speech.voice import VoiceEncoder

        encoder = VoiceEncoder()  # before anything is touched: says how to install the weights when missing
    faces = None
    if args.faces:
        from memtools.faces.models import DlibFaces

        faces = DlibFaces()  # so is the faces extra
    with open_memory(args.memory) as memory:
        given = args.recorded_at_pattern or args.timezone
        result = repair(memory, progress=lambda line: print(line, file=sys.stderr), forget_lost=args.forget_lost,
                        times=recording_rule(args, 0) if given else None)
        if encoder is not None and result.ok:
            from memtools.builder.speaker_repair import add_speakers

            for line in add_speakers(memory, encoder):
                print(f"speakers: {line}")
        if faces is not None and result.ok:
            from memtools.builder.faces import add_faces

            for line in add_faces(memory, faces):
                print(f"faces: {line}")
    print(result.render())
    if not result.ok and not args.forget_lost and result.after is not None \
            and any(p.part == "graph" for p in result.after.problems):
        print(f"If no backup of the graph exists, `memtools repair --forget-lost --memory {args.memory}` marks "
              "those videos lost so the rest of the memory works and they can be imported again.")
    return 0 if result.ok else 1
