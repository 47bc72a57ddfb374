"""Read replicas against a local S3 server (moto, 127.0.0.1): ``publish`` time and size, and how long a
server takes to move to a new version.

A memory of ``--videos`` synthetic kitchen videos (``TestEmbedder``: the model is not what is
measured) is published; a ``ReplicaTools`` (what ``memtools serve --memory s3://...`` runs) serves
it; one more video is written and published, and the replica moves to it twice over:

* ``check_now``: download + sha256 check + open + warm-up + switch, timed directly;
* polling (``--poll`` seconds): from the moment ``LATEST.json`` moves to the first call answered
  by the new version, as a client sees it (includes up to one poll interval of waiting).

moto keeps objects in this process's memory over loopback HTTP, so transfer times are a floor:
a real bucket adds its latency and bandwidth. Needs the ``dev`` extra (moto, boto3).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _common import load_average, markdown_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=20, help="videos in the published memory (default 20)")
    parser.add_argument("--poll", type=float, default=0.5, help="the replica's poll interval in seconds (default 0.5)")
    args = parser.parse_args()

    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from memtools.embed import TestEmbedder
    from memtools.mcp.replica_serving import ReplicaTools
    from memtools.replica import publish
    from memtools.store import Memory
    from memtools.testing import kitchen_graph

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1",
                      AWS_ENDPOINT_URL=f"http://{host}:{port}")
    boto3.client("s3", endpoint_url=f"http://{host}:{port}").create_bucket(Bucket="bench")
    uri = "s3://bench/library"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "memory"
        with Memory.create(folder, TestEmbedder(64)) as memory:
            memory.write_videos([kitchen_graph(f"v{i:04d}") for i in range(args.videos)])
        first = publish(folder, uri)
        rows.append(["publish (first version)", f"{first.files}", f"{first.size / 1e6:.1f}", f"{first.seconds:.2f}",
                     f"{first.locked_seconds:.3f}", f"{first.uploaded / 1e6:.1f}"])
        again = publish(folder, uri)
        rows.append(["publish (unchanged memory)", f"{again.files}", f"{again.size / 1e6:.1f}", f"{again.seconds:.2f}",
                     f"{again.locked_seconds:.3f}", f"{again.uploaded / 1e6:.1f}"])
        replica = ReplicaTools(uri, cache_dir=Path(tmp) / "cache", poll_seconds=3600)
        started = time.perf_counter()
        replica.start()
        rows.append(["replica start (download, check, open, warm)", "", "", f"{time.perf_counter() - started:.2f}",
                     "", ""])
        with Memory.open(folder, TestEmbedder(64)) as memory:
            memory.write_video(kitchen_graph("added-1"))
        third = publish(folder, uri)
        rows.append(["publish (one video more)", f"{third.files}", f"{third.size / 1e6:.1f}", f"{third.seconds:.2f}",
                     f"{third.locked_seconds:.3f}", f"{third.uploaded / 1e6:.1f}"])
        started = time.perf_counter()
        replica.check_now()
        rows.append(["replica moves to it (check_now)", "", "", f"{time.perf_counter() - started:.2f}", "", ""])
        replica.close()

        polling = ReplicaTools(uri, cache_dir=Path(tmp) / "cache", poll_seconds=args.poll)
        polling.start()
        with Memory.open(folder, TestEmbedder(64)) as memory:
            memory.write_video(kitchen_graph("added-2"))
        fourth = publish(folder, uri)  # LATEST moved when this returned
        moved = time.perf_counter()
        while "added-2" not in {v.video_id for v in polling().list_videos().videos}:
            time.sleep(0.01)
        rows.append([f"LATEST moved -> first answer from it (poll {args.poll:g} s)", "", "",
                     f"{time.perf_counter() - moved:.2f}", "", ""])
        polling.close()
        del fourth
    server.stop()
    print(f"{args.videos + 1} videos, TestEmbedder(64), moto on 127.0.0.1; load average {load_average()}\n")
    print(markdown_table(["step", "files", "MB", "seconds", "writes held off (s)", "MB uploaded"], rows))


if __name__ == "__main__":
    main()
