"""``memtools publish``: a versioned snapshot of a memory on object storage, for read replicas."""

from __future__ import annotations

import argparse
import sys

from memtools.arg_types import positive_int
from memtools.cli.common import add_memory_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "publish", help="publish a snapshot of the memory to S3 for read replicas (memtools serve --memory s3://...)",
        description="Write the memory's next version to s3://BUCKET/PREFIX: its files are copied while writes are "
                    "held off (only for the copy), checked as `memtools check` does (a damaged memory is "
                    "refused: nothing is uploaded, exit status 1), uploaded to versions/NNNNNN/, listed with "
                    "sizes and sha256 in SNAPSHOT.json, and only then LATEST.json points at it, so servers never "
                    "see a half-written version. After a purge (memtools forget --purge, retention), every other "
                    "version that holds a purged video is deleted and the purge's receipt records it. Older "
                    "versions beyond --keep are deleted. Credentials and endpoint come from the AWS_* environment "
                    "variables (AWS_ENDPOINT_URL for MinIO and other S3-compatible servers).")
    add_memory_arg(p)
    p.add_argument("uri", metavar="s3://BUCKET/PREFIX", help="where the versions go (the same URI for every publish)")
    p.add_argument("--keep", type=positive_int, default=3, metavar="K",
                   help="versions kept on the store; older ones are deleted once LATEST moves (default 3)")
    p.add_argument("--full", action="store_true",
                   help="upload every file; by default files the previous version holds unchanged are copied "
                        "inside the store")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.replica import publish

    published = publish(args.memory, args.uri, keep=args.keep, full=args.full,
                        progress=lambda text: print(text, file=sys.stderr, flush=True) if args.verbose else None)
    record_purges(args.memory, published.purged)
    print(published.render())
    return 0


def record_purges(folder, purged: dict[str, dict]) -> None:
    """Record in each purge's receipt what the publish deleted for it (``bucket``, and ``buckets`` by URI)."""
    if not purged:
        return
    from memtools.changes.purge import receipts, update_receipt
    from memtools.replica.purged import receipt_fields

    found = {r.get("change_id"): r for r in receipts(folder)}
    for cid, record in sorted(purged.items()):
        update_receipt(folder, cid, **receipt_fields(found.get(cid, {}), record))
