"""What publish and replicas refuse: a damaged memory is never published, and a replica never serves a version
of a format it does not know or one that lacks a part every memory needs (it keeps serving the one it has);
S3 errors name their real cause. A local S3 server (moto) on 127.0.0.1."""

from __future__ import annotations

import json
import shutil

import pytest

from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.errors import ConfigError, MemoryDamaged, StoreError
from memtools.mcp.replica_serving import ReplicaTools
from memtools.replica import publish
from memtools.store import Memory
from memtools.testing import kitchen_graph
from replica_support import bucket_fixture, keys, s3_endpoint_fixture  # noqa: F401 - fixtures

PARTS = ["videos.sqlite", "memtools.json", "graph.kuzu", "vectors/nodes.lance", "vectors/entities.lance"]


def _memory(path, *videos: str):
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_videos([kitchen_graph(v) for v in videos])
    return path


def _latest(client, name: str, prefix: str) -> dict:
    return json.loads(client.get_object(Bucket=name, Key=f"{prefix}/LATEST.json")["Body"].read())


def _put_version_without(client, name: str, folder, prefix: str, version: int, drop: str) -> None:
    """Version ``version`` of ``prefix`` made by hand from a publish of ``folder``, without ``drop`` (a file or a
    folder of the memory) in its files or its SNAPSHOT.json; then LATEST.json names it."""
    source = f"{prefix}-source-{version}"
    publish(folder, f"s3://{name}/{source}")
    inside = f"{source}/versions/000001/"
    for key in keys(client, name, inside):
        rel = key[len(inside):]
        if rel == "SNAPSHOT.json" or rel == f"files/{drop}" or rel.startswith(f"files/{drop}/"):
            continue
        client.copy_object(Bucket=name, Key=f"{prefix}/versions/{version:06d}/{rel}",
                           CopySource={"Bucket": name, "Key": key})
    snapshot = json.loads(client.get_object(Bucket=name, Key=f"{inside}SNAPSHOT.json")["Body"].read())
    snapshot["version"] = version
    snapshot["files"] = [f for f in snapshot["files"] if f["path"] != drop and not f["path"].startswith(f"{drop}/")]
    client.put_object(Bucket=name, Key=f"{prefix}/versions/{version:06d}/SNAPSHOT.json",
                      Body=json.dumps(snapshot).encode())
    client.put_object(Bucket=name, Key=f"{prefix}/LATEST.json",
                      Body=json.dumps({"version": version, "generation": 1, "format": 1}).encode())


@pytest.fixture(name="served")
def served_fixture(tmp_path, bucket):
    """A replica serving version 1 of s3://BUCKET/kitchen (one video)."""
    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    publish(folder, f"s3://{name}/kitchen")
    replica = ReplicaTools(f"s3://{name}/kitchen", cache_dir=tmp_path / "cache", poll_seconds=3600)
    replica.start()
    yield replica, folder, name, client
    replica.close()


def _still_serving_version_1(replica) -> None:
    assert replica.version == 1 and {v.video_id for v in replica().list_videos().videos} == {"kitchen"}
    assert [p.name for p in replica._cache.folder.iterdir()] == [replica.path.name]  # nothing else downloaded


# --- publish checks the staged copy --------------------------------------------------------


@pytest.mark.parametrize("part, says", [
    ("videos.sqlite", "[catalog] videos.sqlite (the list of videos) cannot be read"),
    ("graph.kuzu", "[graph] graph.kuzu cannot be read"),
])
def test_publish_refuses_a_damaged_memory_and_leaves_latest_alone(tmp_path, bucket, capsys, part, says):
    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    uri = f"s3://{name}/kitchen"
    publish(folder, uri)
    before = keys(client, name)
    (folder / part).write_bytes(b"this is not a database " * 200)
    with pytest.raises(MemoryDamaged, match="refusing to publish the memory at .* it is damaged") as refused:
        publish(folder, uri)
    assert says in str(refused.value) and "LATEST.json still names version 1" in str(refused.value)
    assert main(["publish", "--memory", str(folder), uri]) == 1
    err = capsys.readouterr().err
    assert "refusing to publish" in err and says in err and "Traceback" not in err
    assert keys(client, name) == before and _latest(client, name, "kitchen")["version"] == 1  # nothing uploaded
    assert not list(folder.glob(".publish-*"))  # the staged copy is gone


def test_publish_refuses_a_memory_that_lost_a_table_before_uploading_anything(tmp_path, bucket):
    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    shutil.rmtree(folder / "vectors" / "nodes.lance")
    with pytest.raises(MemoryDamaged, match=r"\[vectors\] vectors/nodes.lance is missing .*nothing was uploaded.*"
                                            r"Run `memtools repair --memory"):
        publish(folder, f"s3://{name}/kitchen")
    assert keys(client, name) == []


# --- a replica refuses formats it does not know ----------------------------------------------


@pytest.mark.parametrize("latest", [{"version": 2, "generation": 2, "format": 99},
                                    {"version": 2, "generation": 2, "format": "1"}])
def test_a_replica_refuses_a_latest_pointer_of_an_unknown_format(served, latest):
    replica, folder, name, client = served
    publish(folder, f"s3://{name}/kitchen")  # version 2, whole
    client.put_object(Bucket=name, Key="kitchen/LATEST.json", Body=json.dumps(latest).encode())
    with pytest.raises(StoreError, match=rf"LATEST.json is in format {latest['format']!r}, which memtools .* does "
                                         "not read .*Upgrade memtools"):
        replica.check_now()
    _still_serving_version_1(replica)
    with pytest.raises(StoreError, match="LATEST.json is in format"):  # nor does publish move past it
        publish(folder, f"s3://{name}/kitchen")


@pytest.mark.parametrize("form", [0, 99, "1"])
def test_a_replica_refuses_a_snapshot_listing_of_an_unknown_format(served, form):
    replica, folder, name, client = served
    publish(folder, f"s3://{name}/kitchen")
    key = "kitchen/versions/000002/SNAPSHOT.json"
    snapshot = json.loads(client.get_object(Bucket=name, Key=key)["Body"].read())
    client.put_object(Bucket=name, Key=key, Body=json.dumps({**snapshot, "format": form}).encode())
    with pytest.raises(StoreError, match=rf"SNAPSHOT.json is in format {form!r}, which memtools"):
        replica.check_now()
    _still_serving_version_1(replica)


def test_a_first_start_on_an_unknown_format_fails_clearly(tmp_path, bucket, capsys):
    name, client = bucket
    publish(_memory(tmp_path / "m", "kitchen"), f"s3://{name}/kitchen")
    client.put_object(Bucket=name, Key="kitchen/LATEST.json", Body=b'{"version": 1, "format": 99}')
    assert main(["serve", "--memory", f"s3://{name}/kitchen", "--cache-dir", str(tmp_path / "cache")]) == 1
    err = capsys.readouterr().err
    assert "LATEST.json is in format 99, which memtools" in err and "Traceback" not in err


# --- a replica refuses a version that lacks a part -------------------------------------------


@pytest.mark.parametrize("part", PARTS)
def test_a_replica_never_moves_to_a_version_that_lacks_a_part(served, part):
    replica, folder, name, client = served
    _put_version_without(client, name, folder, "kitchen", 2, part)
    with pytest.raises(StoreError, match=rf"version 2 lacks part\(s\) every memory needs: {part}.? .*is missing"):
        replica.check_now()
    _still_serving_version_1(replica)
    publish(folder, f"s3://{name}/kitchen")  # version 3 is whole
    assert replica.check_now() and replica.version == 3


def test_the_poller_warns_of_a_version_that_lacks_a_part_and_keeps_serving(tmp_path, bucket, caplog):
    import time

    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    publish(folder, f"s3://{name}/kitchen")
    replica = ReplicaTools(f"s3://{name}/kitchen", cache_dir=tmp_path / "cache", poll_seconds=0.1)
    replica.start()
    try:
        _put_version_without(client, name, folder, "kitchen", 2, "videos.sqlite")
        deadline = time.monotonic() + 60  # a hang guard: the poller tries within a few polls
        while "videos.sqlite (the list of videos) is missing" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
        warned = [r for r in caplog.records if "lacks part(s)" in r.getMessage()]
        assert warned and warned[0].levelname == "WARNING"
        assert "still serving version 1" in warned[0].getMessage()
        _still_serving_version_1(replica)
    finally:
        replica.close()


def test_a_first_start_on_a_version_that_lacks_a_part_fails_clearly(tmp_path, bucket, capsys):
    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    _put_version_without(client, name, folder, "kitchen", 1, "graph.kuzu")
    with pytest.raises(StoreError, match="version 1 lacks part.* graph.kuzu is missing"):
        ReplicaTools(f"s3://{name}/kitchen", cache_dir=tmp_path / "cache").start()
    assert main(["serve", "--memory", f"s3://{name}/kitchen", "--cache-dir", str(tmp_path / "cache")]) == 1
    err = capsys.readouterr().err
    assert "version 1 lacks part(s) every memory needs: graph.kuzu is missing" in err and "Traceback" not in err
    assert not any((tmp_path / "cache").rglob("memtools.json"))  # nothing left in the cache


# --- S3 errors name their cause ---------------------------------------------------------------


def test_a_bucket_removed_under_a_replica_is_named_not_taken_for_an_empty_prefix(served):
    replica, _folder, name, client = served
    for key in keys(client, name):
        client.delete_object(Bucket=name, Key=key)
    client.delete_bucket(Bucket=name)
    with pytest.raises(ConfigError, match=f"there is no bucket '{name}' at the S3 endpoint"):
        replica.check_now()
    assert replica.version == 1


def test_an_unknown_access_key_is_named_not_retried(bucket, monkeypatch):
    from moto import settings

    from memtools.replica.bucket import Bucket

    name, _ = bucket
    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # the local server checks credentials now
    store = Bucket(f"s3://{name}/kitchen", environ={**__import__("os").environ, "AWS_ACCESS_KEY_ID": "NOSUCHKEY"})
    for action in (store.list, lambda: store.write_bytes("x", b"x")):
        with pytest.raises(ConfigError, match="S3 refused .* the endpoint does not know the access key NOSUCHKEY"):
            action()


def test_a_wrong_secret_is_named():
    from memtools.replica.bucket import Bucket

    bucket = Bucket("s3://bucket/lib", environ={"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"})
    text = ("When listing objects under key 'lib/' in bucket 'bucket': AWS Error SIGNATURE_DOES_NOT_MATCH during "
            "ListObjectsV2 operation: The request signature we calculated does not match the signature you provided")
    error = bucket._error("listing", OSError(text))
    assert isinstance(error, ConfigError) and "the secret key does not match the access key" in str(error)
