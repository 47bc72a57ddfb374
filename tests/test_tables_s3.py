"""A memory whose lance tables live on object storage: a local S3 server (moto) on 127.0.0.1."""

from __future__ import annotations

import pytest

from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.errors import ConfigError
from memtools.store import Memory
from memtools.store.integrity.checker import check
from memtools.store.integrity.repair import repair
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")


@pytest.fixture(scope="module")
def s3_endpoint():
    _quiet_server_log()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture()
def bucket(s3_endpoint, monkeypatch, request):
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": s3_endpoint}.items():
        monkeypatch.setenv(name, value)
    name = request.node.name.replace("_", "-")[:50].strip("-").lower()
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=name)
    return name, client


def _quiet_server_log():
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)


def _searches(tools):
    return [tools.search_nodes(q, top_k=5).render() for q in ("pouring water", "knife on the board", "kitchen")]


def test_a_memory_with_tables_on_s3_is_written_and_searched(tmp_path, bucket):
    name, client = bucket
    uri = f"s3://{name}/memories/kitchen/"
    with Memory.create(tmp_path / "local", TestEmbedder(64)) as memory:
        memory.write_video(kitchen_graph())
        expected = _searches(MemoryTools(memory))
    with Memory.create(tmp_path / "remote", TestEmbedder(64), tables=uri) as memory:
        memory.write_video(kitchen_graph())
        assert _searches(MemoryTools(memory)) == expected

    assert not (tmp_path / "remote" / "vectors").exists()  # the folder keeps the graph and the manifest only
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=name)["Contents"]]
    assert any(k.startswith("memories/kitchen/nodes.lance/") for k in keys)
    assert any(k.startswith("memories/kitchen/entities.lance/") for k in keys)

    with Memory.open(tmp_path / "remote", TestEmbedder(64)) as memory:  # a reader: the manifest names the tables
        assert memory.manifest.tables == uri.rstrip("/")
        assert _searches(MemoryTools(memory)) == expected
        report = check(memory)
        assert report.ok, report.render()
        assert report.parts["tables"].startswith(uri.rstrip("/")) and "row(s)" in report.parts["vectors"]
        assert memory.delete_video("kitchen")
        assert MemoryTools(memory).search_nodes("kitchen").hits == []


def test_check_tells_when_the_tables_on_s3_are_gone(tmp_path, bucket, capsys):
    name, client = bucket
    with Memory.create(tmp_path / "m", TestEmbedder(64), tables=f"s3://{name}/t") as memory:
        memory.write_video(kitchen_graph())
    for obj in client.list_objects_v2(Bucket=name)["Contents"]:
        client.delete_object(Bucket=name, Key=obj["Key"])
    with Memory.open(tmp_path / "m", TestEmbedder(64)) as memory:
        report = check(memory)
        assert not report.ok
        assert any(p.part == "vectors" and "missing" in p.text for p in report.problems), report.render()
        repair(memory)  # the rows come back from the graph, into the bucket
        assert check(memory).ok
        assert MemoryTools(memory).search_nodes("pouring water").hits


def test_the_cli_creates_a_memory_with_tables_on_s3(tmp_path, bucket, capsys):
    name, _ = bucket
    captions = tmp_path / "clip.srt"
    captions.write_text("1\n00:00:00,000 --> 00:00:05,000\nA chef slices onions.\n\n"
                        "2\n00:00:05,000 --> 00:00:10,000\nThe onions go into a hot pan.\n", encoding="utf-8")
    memory = tmp_path / "memory"
    assert main(["import-captions", str(captions), "--memory", str(memory), "--embedder", "test:64",
                 "--tables", f"s3://{name}/lib"]) == 0
    capsys.readouterr()
    assert main(["tool", "search_nodes", "--memory", str(memory), "--query", "onions pan"]) == 0
    assert "pan" in capsys.readouterr().out
    assert main(["check", "--memory", str(memory)]) == 0
    assert f"s3://{name}/lib" in capsys.readouterr().out


def test_a_tables_uri_must_name_object_storage(tmp_path):
    with pytest.raises(ConfigError, match="s3://BUCKET/PREFIX"):
        Memory.create(tmp_path / "m", TestEmbedder(64), tables="ftp://host/x")
    with Memory.create(tmp_path / "m2", TestEmbedder(64)):
        pass
    with pytest.raises(ConfigError, match="keeps its tables at vectors/"):
        Memory.create(tmp_path / "m2", TestEmbedder(64), tables="s3://b/p")
