"""Read replicas in one process: publish to a local S3 server (moto), serve with ``ReplicaTools``, switch versions."""

from __future__ import annotations

import hashlib
import json

import pytest

from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.errors import ConfigError, MemoryNotFound, StoreError
from memtools.mcp.replica_serving import ReplicaTools
from memtools.replica import publish
from memtools.store import Memory
from memtools.testing import kitchen_graph
from replica_support import bucket_fixture, keys, s3_endpoint_fixture  # noqa: F401 - fixtures


def _memory(path, *videos: str):
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_videos([kitchen_graph(v) for v in videos])
    return path


def _add(path, video: str) -> None:
    with Memory.open(path, TestEmbedder(64)) as memory:
        memory.write_video(kitchen_graph(video))


def _listed(tools) -> set[str]:
    return {v.video_id for v in tools.list_videos().videos}


def test_publish_writes_whole_versions_then_moves_latest_and_keeps_k(tmp_path, bucket):
    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    (folder / "work" / "kitchen").mkdir(parents=True)
    (folder / "work" / "kitchen" / "checkpoint.json").write_text("{}")
    first = publish(folder, f"s3://{name}/lib/kitchen", keep=2)
    assert first.version == 1 and first.files > 3 and first.size > 0 and first.uploaded == first.size

    latest = json.loads(client.get_object(Bucket=name, Key="lib/kitchen/LATEST.json")["Body"].read())
    assert latest["version"] == 1 and latest["generation"] == 1
    listing = client.get_object(Bucket=name, Key="lib/kitchen/versions/000001/SNAPSHOT.json")["Body"].read()
    snapshot = json.loads(listing)
    listed = {f["path"]: f for f in snapshot["files"]}
    assert "memtools.json" in listed and "graph.kuzu" in listed
    assert any(p.startswith("vectors/nodes.lance/") for p in listed)
    assert not any(p.startswith(("work/", "memtools.lock", ".publish-")) for p in listed)  # never published
    body = client.get_object(Bucket=name, Key="lib/kitchen/versions/000001/files/memtools.json")["Body"].read()
    assert hashlib.sha256(body).hexdigest() == listed["memtools.json"]["sha256"] == hashlib.sha256(
        (folder / "memtools.json").read_bytes()).hexdigest()
    assert not list(folder.glob(".publish-*"))  # the staging folder is gone

    _add(folder, "k2")
    assert publish(folder, f"s3://{name}/lib/kitchen", keep=2).version == 2
    third = publish(folder, f"s3://{name}/lib/kitchen", keep=2)
    assert (third.version, third.generation, third.removed) == (3, 2, [1])
    assert third.uploaded == 0  # nothing changed since version 2: every file was copied inside the store
    body = client.get_object(Bucket=name, Key="lib/kitchen/versions/000003/files/memtools.json")["Body"].read()
    assert body == (folder / "memtools.json").read_bytes()
    forced = publish(folder, f"s3://{name}/lib/kitchen", keep=2, full=True)  # --full: every file uploaded
    assert forced.uploaded == forced.size and forced.removed == [2]
    versions = {k.split("/")[3] for k in keys(client, name, "lib/kitchen/versions/")}
    assert versions == {"000003", "000004"}


def test_a_replica_serves_the_latest_version_and_moves_on_with_calls_in_flight_kept(tmp_path, bucket):
    name, _ = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    uri = f"s3://{name}/kitchen"
    publish(folder, uri)
    replica = ReplicaTools(uri, cache_dir=tmp_path / "cache", poll_seconds=3600)
    replica.start()
    try:
        assert replica.version == 1 and _listed(replica()) == {"kitchen"}
        assert replica.check_now() is False  # nothing new
        _add(folder, "k2")
        publish(folder, uri)
        with replica.hold() as in_flight:  # a call that began on version 1
            old_folder = in_flight.memory.path
            assert replica.check_now() is True and replica.version == 2
            kept = [p.relative_to(old_folder) for p in old_folder.rglob("*.lance") if p.is_file()
                    and (replica.path / p.relative_to(old_folder)).is_file()]
            assert kept and all((old_folder / p).samefile(replica.path / p) for p in kept)  # unchanged: linked
            assert _listed(replica()) == {"kitchen", "k2"}  # new calls see version 2
            assert _listed(in_flight) == {"kitchen"} and old_folder.is_dir()  # the old call finishes on version 1
        assert not old_folder.exists()  # closed and removed once its last call ended
        hits = replica().search_nodes("the pan catches fire", top_k=3).hits
        assert hits and {h.video_id for h in hits} <= {"kitchen", "k2"}
    finally:
        replica.close()
    assert not any((tmp_path / "cache").rglob("memtools.json"))  # the server's cache folder went with it


def test_a_version_that_does_not_match_its_listing_is_never_served(tmp_path, bucket):
    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    uri = f"s3://{name}/kitchen"
    publish(folder, uri)
    replica = ReplicaTools(uri, cache_dir=tmp_path / "cache", poll_seconds=3600)
    replica.start()
    try:
        _add(folder, "k2")
        publish(folder, uri)
        client.put_object(Bucket=name, Key="kitchen/versions/000002/files/memtools.json", Body=b"{}")  # damaged
        with pytest.raises(StoreError, match="memtools.json is 2 bytes .* but SNAPSHOT.json says"):
            replica.check_now()
        assert replica.version == 1 and _listed(replica()) == {"kitchen"}  # still serving version 1
        assert [p.name for p in replica._cache.folder.iterdir()] == [replica.path.name]  # no half-downloaded one
        publish(folder, uri)  # version 3 is whole again
        assert replica.check_now() and replica.version == 3 and _listed(replica()) == {"kitchen", "k2"}
    finally:
        replica.close()


def test_the_poller_logs_a_failed_move_and_keeps_serving(tmp_path, bucket, caplog):
    import time

    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    uri = f"s3://{name}/kitchen"
    publish(folder, uri)
    replica = ReplicaTools(uri, cache_dir=tmp_path / "cache", poll_seconds=0.1)
    replica.start()
    try:
        _add(folder, "k2")
        publish(folder, f"s3://{name}/elsewhere")  # version 2 is put together by hand, without one file
        for key in keys(client, name, "elsewhere/versions/000001/"):
            if not key.endswith("/files/memtools.json"):
                target = key.replace("elsewhere/versions/000001/", "kitchen/versions/000002/")
                client.copy_object(Bucket=name, Key=target, CopySource={"Bucket": name, "Key": key})
        client.put_object(Bucket=name, Key="kitchen/LATEST.json", Body=b'{"version": 2, "generation": 2}')
        deadline = time.monotonic() + 60  # a hang guard: the poller tries within a few polls
        # (moto overwrites an object in place, so a poll may first read LATEST.json half old, half new
        # and log that instead: S3 itself replaces objects whole)
        while "memtools.json is gone" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
        assert f"could not move to the newest version of {uri}" in caplog.text
        assert "still serving version 1" in caplog.text
        assert "memtools.json is gone" in caplog.text
        assert replica.version == 1 and _listed(replica()) == {"kitchen"}
    finally:
        replica.close()


def test_errors_say_what_is_wrong_and_what_to_do(tmp_path, bucket, capsys):
    name, _ = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    with pytest.raises(ConfigError, match="there is no bucket 'no-such-bucket'"):
        publish(folder, "s3://no-such-bucket/x")
    with pytest.raises(ConfigError, match="names a whole bucket"):
        publish(folder, f"s3://{name}")
    with pytest.raises(ConfigError, match="not an S3 URI"):
        publish(folder, "gs://bucket/x")
    with pytest.raises(MemoryNotFound, match="nothing is published at .* yet .*`memtools publish --memory DIR"):
        ReplicaTools(f"s3://{name}/empty", cache_dir=tmp_path / "cache").start()
    assert main(["serve", "--memory", f"s3://{name}/empty", "--cache-dir", str(tmp_path / "cache")]) == 1
    assert "nothing is published at" in capsys.readouterr().err
    with Memory.create(tmp_path / "remote", TestEmbedder(64), tables=f"s3://{name}/tables"):
        pass
    with pytest.raises(ConfigError, match="keeps its lance tables at s3://"):
        publish(tmp_path / "remote", f"s3://{name}/remote")


def test_the_cli_publishes(tmp_path, bucket, capsys):
    name, client = bucket
    folder = _memory(tmp_path / "m", "kitchen")
    assert main(["publish", "--memory", str(folder), f"s3://{name}/cli", "--keep", "1"]) == 0
    assert main(["publish", "--memory", str(folder), f"s3://{name}/cli", "--keep", "1"]) == 0
    out = capsys.readouterr().out
    assert "Published version 2 (generation 1)" in out and "removed version(s) 1" in out
    assert f"memtools serve --memory s3://{name}/cli" in out
    assert {k.split("/")[2] for k in keys(client, name, "cli/versions/")} == {"000002"}
    with pytest.raises(SystemExit) as done:
        main(["publish", "--memory", str(folder), f"s3://{name}/cli", "--keep", "0"])
    assert done.value.code == 2
    assert "--keep: must be a whole number of 1 or more" in capsys.readouterr().err


def test_an_unreachable_endpoint_is_named(tmp_path, monkeypatch, capsys):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}.items():
        monkeypatch.setenv(name, value)
    assert main(["serve", "--memory", "s3://bucket/lib", "--cache-dir", str(tmp_path / "cache")]) == 1
    err = capsys.readouterr().err
    assert "cannot reach the S3 endpoint for s3://bucket/lib" in err and f"127.0.0.1:{port}" in err
    assert "Traceback" not in err


def test_only_serve_reads_a_published_memory(capsys):
    with pytest.raises(SystemExit):
        main(["info", "--memory", "s3://bucket/lib"])
    assert "must name a folder, not a URI (s3://bucket/lib)" in capsys.readouterr().err
    assert main(["--memory", "s3://bucket/lib", "info"]) == 2
    assert "only `memtools serve` reads" in capsys.readouterr().err


@pytest.mark.parametrize("text, says", [
    ("AWS Error NETWORK_CONNECTION during ListObjectsV2 operation: curlCode: 7, Could not connect to server; "
     "Details: Failed to connect to 127.0.0.1:40371 after 0 ms", "cannot reach the S3 endpoint"),
    ("AWS Error UNKNOWN (HTTP status 403) during ListObjectsV2 operation", "S3 refused listing"),
    ("AWS Error ACCESS_DENIED during GetObject operation: Access Denied", "S3 refused listing"),
])
def test_store_errors_are_told_apart_by_what_they_say(text, says):
    from memtools.replica.bucket import Bucket

    bucket = Bucket("s3://bucket/lib", environ={"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"})
    assert says in str(bucket._error("listing", OSError(text)))
