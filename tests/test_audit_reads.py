"""Who read what (``memtools serve --audit-reads``): one whole JSON line per tool call in ``<memory>/reads.jsonl``,
printed by ``memtools log --reads`` with the client's text escaped."""

from __future__ import annotations

import json
import threading

import pytest

from mcp_support import VALID_CALLS, Client, make_memory
from memtools.cli import main as cli_main
from memtools.errors import ConfigError
from memtools.mcp.audit_reads import READS_FILE, ReadsAudit, node_ids, records
from memtools.mcp.sdk import SDK_MAJOR
from memtools.mcp.server import build_server

MODE = "legacy" if SDK_MAJOR == 2 else "memory"


def test_node_ids_are_every_id_field_once_in_order():
    structured = {"video_id": "kitchen", "hits": [{"id": "kitchen/macro_0002", "score": 0.9, "title": "id"},
                                                 {"id": "kitchen/macro_0001", "macro_id": "kitchen/macro_0002"}],
                  "node_ids": ["kitchen/evt_001", 3, None], "text_ids": ["kitchen/ocr_1"], "id": "",
                  "nested": {"deeper": [{"entity_id": "kitchen/entity_001"}]}, "name": "kitchen/not_an_id"}
    assert node_ids(structured) == ["kitchen", "kitchen/macro_0002", "kitchen/macro_0001", "kitchen/evt_001",
                                    "kitchen/ocr_1", "kitchen/entity_001"]
    assert node_ids(None) == [] and node_ids("kitchen") == []


async def test_every_tool_call_is_one_line(tmp_path):
    memory = make_memory(tmp_path)
    async with Client(build_server(memory, audit_reads=True), mode=MODE) as client:
        for tool, arguments in VALID_CALLS.items():
            assert not (await client.call_tool(tool, arguments)).is_error, tool
        refused = await client.call_tool("get_summary", {"video_id": "nowhere\n\x1b[31m"})
        assert refused.is_error
    lines = (memory / READS_FILE).read_text().splitlines()
    assert len(lines) == len(VALID_CALLS) + 1
    rows = [json.loads(line) for line in lines]
    assert [r["tool"] for r in rows] == [*VALID_CALLS, "get_summary"]
    assert all(set(r) == {"at", "caller", "tool", "arguments", "node_ids"} for r in rows)
    assert all(r["caller"] == "stdio client" and r["at"].endswith("+00:00") for r in rows)
    by_tool = {r["tool"]: r for r in rows[:-1]}
    assert by_tool["search_nodes"]["arguments"] == VALID_CALLS["search_nodes"]
    assert "kitchen/macro_0002" in by_tool["get_subgraph"]["node_ids"]
    assert any(i.startswith("kitchen/kf_") for i in by_tool["inspect_frames"]["node_ids"])
    assert rows[-1]["node_ids"] == [] and rows[-1]["arguments"] == {"video_id": "nowhere\n\x1b[31m"}
    assert all(line.isascii() for line in lines)  # the client's text is escaped JSON


async def test_off_by_default_and_prefixed_tools_recorded_by_their_name(tmp_path):
    memory = make_memory(tmp_path)
    async with Client(build_server(memory), mode=MODE) as client:
        await client.call_tool("list_videos", {})
    assert not (memory / READS_FILE).exists()
    async with Client(build_server(memory, audit_reads=True, tool_prefix="mt_"), mode=MODE) as client:
        await client.call_tool("mt_list_videos", {})
    assert [r["tool"] for r in records(memory)] == ["list_videos"]


def test_lines_stay_whole_under_concurrent_writers(tmp_path):
    audit = ReadsAudit(tmp_path)
    big = {"query": "x" * 20_000}

    def write(n: int) -> None:
        for i in range(50):
            audit.record(f"caller {n}", "search_nodes", {**big, "i": i}, None)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)] + [
        threading.Thread(target=ReadsAudit(tmp_path).record, args=("other", "list_videos", {}, None))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = list(records(tmp_path))
    assert len(found) == 201 and None not in found


def test_log_reads_prints_newest_first_escaped(tmp_path, capsys):
    memory = make_memory(tmp_path)
    audit = ReadsAudit(memory)

    class Result:
        isError = False
        structuredContent = {"hits": [{"id": "kitchen/macro_0002"}]}

    audit.record("alice", "search_nodes", {"query": "first"}, Result())
    audit.record("mallory\n\x1b[2J", "search_nodes", {"query": "evil\u2028line\x1b[31m"}, Result())
    with (memory / READS_FILE).open("a") as f:
        f.write('{"at": "cut short')  # a torn last line
    assert cli_main(["log", "--reads", "--memory", str(memory)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 2 and "mallory\\n\\x1b[2J" in lines[0] and "alice" in lines[1]
    assert "evil\\u2028line\\u001b[31m" in lines[0] and "\x1b" not in out and "\u2028" not in out
    assert "-> 1 id: kitchen/macro_0002" in lines[1]
    assert "1 line(s)" in err
    assert cli_main(["log", "--reads", "--json", "--limit", "1", "--memory", str(memory)]) == 0
    out, _ = capsys.readouterr()
    assert [json.loads(x)["caller"] for x in out.splitlines()] == ["mallory\n\x1b[2J"] and out.isascii()


def test_log_reads_without_records(tmp_path, capsys):
    memory = make_memory(tmp_path)
    assert cli_main(["log", "--reads", "--memory", str(memory)]) == 0
    assert "--audit-reads" in capsys.readouterr().out


def test_a_replica_is_refused():
    class Replica:
        read_only = True
        path = "cache"

        def __call__(self):
            raise AssertionError("not opened")

    from memtools.mcp.server import LazyTools

    class ReplicaTools(LazyTools, Replica):
        pass

    with pytest.raises(ConfigError, match="--audit-reads"):
        build_server(ReplicaTools("cache"), audit_reads=True)
