"""Published copies after a purge (issue 47, item 3), on a local S3 server (moto): ``memtools publish`` deletes every
other version that holds a purged video and records it in the receipt; a replica that moves keeps nothing of it.

The bytes are read as stored: every object of the bucket (and the SQLite ones' zlib blobs, as
``purge_support.holders`` reads the memory folder), and every file of a replica's cache. The positive control finds
the purged video's caption, transcript line, vector, voice and keyframe marker in the versions before the purge.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from memtools.changes import forget_video
from memtools.changes.purge import purge_videos, receipts
from memtools.cli import main
from memtools.errors import StoreError
from memtools.mcp.replica_serving import ReplicaTools
from memtools.replica import publish
from memtools.replica.snapshot import skipped
from memtools.store import Memory
from purge_support import EMBEDDER, SECRETS, _blobs, build, graph, holders, needles
from replica_support import bucket_fixture, keys, s3_endpoint_fixture  # noqa: F401 - fixtures


def wanted(folder: Path) -> dict[str, bytes]:
    """thu's needles that the memory folder holds in files a version publishes (faces, for one, never are:
    docs/faces.md)."""
    with Memory.open(folder, EMBEDDER) as memory:
        all_ = needles(memory, "thu", 2)
    where = holders(folder, all_)
    found = {k: v for k, v in all_.items() if any(not skipped(Path(p)) for p in where[k])}
    assert {"said", "caption", "vector0", "frame", "voice"} <= set(found), where
    return found


def wanted_forgotten(folder: Path, video_id: str) -> dict[str, bytes]:
    """A forgotten video's sentences (its vectors left with it)."""
    return {"said": SECRETS[video_id][0].encode(), "caption": SECRETS[video_id][1].encode()}


def nowhere(found: dict[str, set[str]]) -> bool:
    return not any(found.values())


def in_bucket(client, name: str, prefix: str, needles_: dict[str, bytes]) -> dict[str, set[str]]:
    """For each needle, the version folders (``000001``) of the objects whose bytes hold it."""
    found: dict[str, set[str]] = {k: set() for k in needles_}
    for key in keys(client, name, prefix):
        body = client.get_object(Bucket=name, Key=key)["Body"].read()
        data = [body]
        if key.endswith(".sqlite"):
            with tempfile.TemporaryDirectory() as tmp:
                (Path(tmp) / "x.sqlite").write_bytes(body)
                data += _blobs(Path(tmp) / "x.sqlite")
        for what, needle in needles_.items():
            if any(needle in d for d in data):
                parts = key[len(prefix):].split("/")
                found[what].add(parts[1] if parts[0] == "versions" else key)
    return found


def versions(client, name: str, prefix: str) -> list[str]:
    return sorted({k[len(prefix):].split("/")[1] for k in keys(client, name, f"{prefix}versions/")})


def test_publish_after_a_purge_deletes_every_version_that_holds_the_video(tmp_path, bucket, capsys):
    name, client = bucket
    folder, uri = tmp_path / "m", f"s3://{name}/lib"
    build(folder, "kuzu")
    publish(folder, uri, keep=5)
    with Memory.open(folder, EMBEDDER) as memory:
        memory.write_video(graph("wed"))
    publish(folder, uri, keep=5)
    replica = ReplicaTools(uri, cache_dir=tmp_path / "cache", poll_seconds=3600)
    replica.start()
    try:
        old_copy = replica.path
        needles_ = wanted(folder)
        before = in_bucket(client, name, "lib/", needles_)
        assert all(v == {"000001", "000002"} for v in before.values()), before  # the positive control
        held = len(keys(client, name, "lib/versions/000001/")) + len(keys(client, name, "lib/versions/000002/"))
        assert all(holders(tmp_path / "cache", needles_).values())  # ... and in the replica's copy

        with Memory.open(folder, EMBEDDER) as memory:
            cid = purge_videos(memory, ["thu"])["change_id"]
        assert main(["publish", "--memory", str(folder), uri, "--keep", "5"]) == 0
        out = capsys.readouterr().out
        assert f"purge {cid}: version(s) 1, 2 holding its video(s) deleted" in out

        assert versions(client, name, "lib/") == ["000003"]
        assert nowhere(in_bucket(client, name, "lib/", needles_))
        contents = json.loads(client.get_object(Bucket=name, Key="lib/versions/000003/VIDEOS.json")["Body"].read())
        assert contents["videos"] == ["mon", "tue", "wed"] and contents["purges"] == [cid]
        [receipt] = receipts(folder)
        record = receipt["bucket"]
        assert record["uri"] == uri and record["versions_deleted"] == [1, 2] and record["version"] == 3
        assert record["objects_deleted"] == held
        assert record["pending_until"] is None and receipt["buckets"] == {uri: record}

        # the replica moves to version 3 (downloading it whole: its version 1 is gone from the store) and drops
        # its copy of version 1: nothing of the video is left on its disk
        assert replica.check_now() and replica.version == 3
        assert not old_copy.exists()
        assert nowhere(holders(tmp_path / "cache", needles_))
        assert {v.video_id for v in replica().list_videos().videos} == {"mon", "tue", "wed"}
    finally:
        replica.close()

    # the next publish keeps version 3 (staged after the purge) and leaves the receipt as it was
    again = publish(folder, uri, keep=5)
    assert again.version == 4 and again.purged == {}
    assert versions(client, name, "lib/") == ["000003", "000004"]
    assert receipts(folder)[0]["bucket"] == record


def test_only_versions_that_may_hold_the_video_go(tmp_path, bucket):
    name, client = bucket
    folder, uri = tmp_path / "m", f"s3://{name}/lib"
    with Memory.create(folder, EMBEDDER) as memory:
        memory.write_videos([graph("mon"), graph("tue")])
    publish(folder, uri, keep=9)  # 1: before thu was added: kept
    with Memory.open(folder, EMBEDDER) as memory:
        memory.write_video(graph("thu"))
    publish(folder, uri, keep=9)  # 2: lists thu
    with Memory.open(folder, EMBEDDER) as memory:
        forget_video(memory, "thu")
    publish(folder, uri, keep=9)  # 3: thu forgotten (undoably): its copy is in the change log
    with Memory.open(folder, EMBEDDER) as memory:
        memory.write_video(graph("wed"))
    publish(folder, uri, keep=9)  # 4: carries "thu was here" forward from 3
    client.delete_object(Bucket=name, Key="lib/versions/000001/VIDEOS.json")
    publish(folder, uri, keep=9)  # 5
    publish(folder, uri, keep=9)  # 6
    client.delete_object(Bucket=name, Key="lib/versions/000005/VIDEOS.json")  # as an older memtools left it
    listed = {n: json.loads(client.get_object(Bucket=name, Key=f"lib/versions/00000{n}/VIDEOS.json")["Body"].read())
              for n in (2, 3, 4)}
    assert "thu" in listed[2]["videos"] and "thu" not in listed[3]["videos"] and "thu" in listed[3]["seen"]
    assert "thu" in listed[4]["seen"]
    needles_ = wanted_forgotten(folder, "thu")
    before = in_bucket(client, name, "lib/", needles_)
    assert {"000002", "000003", "000004"} <= before["said"] and "000001" not in before["said"]

    with Memory.open(folder, EMBEDDER) as memory:
        cid = purge_videos(memory, ["thu"])["change_id"]
    done = publish(folder, uri, keep=9)
    # 1 is gone (no list: taken to hold it), 2-6 held it; 7 is the new one
    assert done.version == 7 and done.purged[cid]["versions_deleted"] == [1, 2, 3, 4, 5, 6]
    assert versions(client, name, "lib/") == ["000007"]
    assert nowhere(in_bucket(client, name, "lib/", needles_))


def test_a_version_from_before_the_video_stays(tmp_path, bucket):
    name, client = bucket
    folder, uri = tmp_path / "m", f"s3://{name}/lib"
    with Memory.create(folder, EMBEDDER) as memory:
        memory.write_videos([graph("mon"), graph("tue")])
    publish(folder, uri, keep=9)
    with Memory.open(folder, EMBEDDER) as memory:
        memory.write_video(graph("thu"))
    publish(folder, uri, keep=9)
    with Memory.open(folder, EMBEDDER) as memory:
        cid = purge_videos(memory, ["thu"])["change_id"]
    assert main(["publish", "--memory", str(folder), uri, "--keep", "9"]) == 0
    assert versions(client, name, "lib/") == ["000001", "000003"]  # 1 never held thu
    assert receipts(folder)[0]["bucket"]["versions_deleted"] == [2]
    other = f"s3://{name}/second"  # a second store: its own record, the first one's kept
    assert main(["publish", "--memory", str(folder), other]) == 0
    stored = receipts(folder)[0]
    assert stored["bucket"]["uri"] == other and stored["bucket"]["versions_deleted"] == []
    assert set(stored["buckets"]) == {uri, other} and stored["buckets"][uri]["versions_deleted"] == [2]
    assert cid == stored["change_id"]


def test_an_unreadable_receipt_stops_the_publish_before_anything_is_uploaded(tmp_path, bucket):
    name, client = bucket
    folder, uri = tmp_path / "m", f"s3://{name}/lib"
    with Memory.create(folder, EMBEDDER) as memory:
        memory.write_videos([graph("mon"), graph("thu")])
        purge_videos(memory, ["thu"])
    [receipt] = (folder / "purges").glob("c*.json")
    receipt.write_text("{not json")
    with pytest.raises(StoreError, match=f"cannot read the purge receipt .*{receipt.name}.*publish again"):
        publish(folder, uri)
    assert keys(client, name, "lib/") == []
