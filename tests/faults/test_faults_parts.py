"""Parts of a memory folder lost or damaged on disk: a sync tool, a partial copy, a full disk."""

from __future__ import annotations

import os

import pytest
from fault_helpers import EMBEDDER, check, cli, mem, searchable, template  # noqa: F401 - fixtures
from mcp.types import TextContent

from mcp_support import Client
from memtools.errors import ConfigError, MemoryDamaged, MemoryNotFound, ToolError
from memtools.mcp import build_server
from memtools.store import Memory
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools


def test_lost_vectors_folder_is_reported_refused_and_repaired(mem, capsys):
    import shutil

    shutil.rmtree(mem / "vectors")
    code, out, _ = cli("info", "--memory", str(mem), capsys=capsys)
    assert code == 1 and "DAMAGED" in out and "vectors/ is missing" in out
    with Memory.open(mem, EMBEDDER) as memory:
        tools = MemoryTools(memory)
        with pytest.raises(ToolError, match=r"vectors/ is missing.*memtools repair --memory"):
            tools.search_nodes("the pan catches fire")
        assert "memtools repair" in tools.list_videos().render()
        with pytest.raises(MemoryDamaged, match="refusing to write.*memtools repair"):
            memory.write_video(kitchen_graph("k3"))  # would leave the older videos unsearchable for good
    assert not (mem / "vectors").exists(), "a read must not recreate an empty vectors/ folder"
    assert check(mem, capsys)[0] == 1
    code, out, _ = cli("repair", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "rebuilt the nodes table aside from the graph (38 vector rows of 2 video(s))" in out
    assert "recounted" not in out  # the counts were right all along
    assert check(mem, capsys) == (0, check(mem, capsys)[1]) and "OK" in check(mem, capsys)[1]
    assert searchable(mem) == {"kitchen", "k2"}


def test_lost_nodes_table_inside_vectors_is_caught_too(mem, capsys):
    import shutil

    shutil.rmtree(mem / "vectors" / "nodes.lance")
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(ToolError, match="vectors/nodes.lance is missing"):
        MemoryTools(memory).get_summary("kitchen")
    assert cli("repair", "--memory", str(mem), capsys=capsys)[0] == 0
    assert searchable(mem) == {"kitchen", "k2"}


def test_lost_graph_names_the_damage_and_what_restores_it(mem, capsys):
    (mem / "graph.kuzu").unlink()
    (mem / "work" / "k2").mkdir(parents=True)  # build checkpoints of k2 survive
    code, _, err = cli("tool", "get_summary", "--memory", str(mem), "--video-id", "kitchen", capsys=capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "graph.kuzu is missing" in err and "Traceback" not in err and "READ ONLY" not in err
    code, out = check(mem, capsys)
    assert code == 1 and "graph" in out and "MISSING" in out
    assert "rerun `memtools build` for k2" in out and "re-import kitchen" in out
    code, out, _ = cli("repair", "--memory", str(mem), capsys=capsys)
    assert code == 1 and "--forget-lost" in out
    assert not (mem / "graph.kuzu").exists(), "repair must not paper over a lost graph with an empty one"
    code, out, _ = cli("repair", "--forget-lost", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "marked video 'kitchen' as lost" in out
    assert check(mem, capsys)[0] == 0
    with Memory.open(mem, EMBEDDER) as memory:
        assert {v.video_id: v.status for v in MemoryTools(memory).list_videos().videos} == {
            "kitchen": "lost", "k2": "lost"}  # listed, not silently dropped
        memory.write_video(kitchen_graph("kitchen"))  # and importable again
    assert searchable(mem) == {"kitchen"}


def _text(result) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


@pytest.mark.parametrize("damage", ["graph", "vectors"])
async def test_mcp_clients_get_the_damage_and_the_fix_not_a_bare_error(mem, damage):
    import shutil

    if damage == "graph":
        (mem / "graph.kuzu").unlink()
    else:
        shutil.rmtree(mem / "vectors")
    async with Client(build_server(mem)) as client:
        result = await client.call_tool("search_nodes", {"query": "fire"})
        assert result.is_error
        text = _text(result)
        assert "is damaged" in text and ("graph.kuzu is missing" in text or "vectors/ is missing" in text)
        assert "memtools check --memory" in text or "memtools repair --memory" in text  # more than the SDK's bare
        # "Error executing tool search_nodes", which is all a client saw before


@pytest.mark.parametrize("content, reason", [
    ('{"format": "memtools-memory", "embedder": {"name": "test:hash-64", "di', "not valid JSON"),
    ("", "not valid JSON"),
    ('{"embedder": {"name": "x", "dim": "many"}}', "embedder.dim"),
    ('[1, 2]', "Input should be an object"),
])
def test_damaged_manifest_is_one_clear_line(mem, capsys, content, reason):
    (mem / "memtools.json").write_text(content)
    for argv in (["info"], ["check"], ["tool", "list_videos"]):
        code, out, err = cli(*argv, "--memory", str(mem), capsys=capsys)
        assert code == 1 and out == ""
        assert len(err.strip().splitlines()) == 1, err
        assert reason in err and "memtools.json is damaged" in err and "restore it from a backup" in err
        assert "errors.pydantic.dev" not in err and "For further information" not in err


def test_truncated_lance_fragment_is_found_and_rebuilt(mem, capsys):
    fragment = sorted((mem / "vectors" / "nodes.lance" / "data").glob("*.lance"))[0]
    with open(fragment, "r+b") as handle:
        handle.truncate(os.path.getsize(fragment) // 10)
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(ToolError, match="memtools check --memory"):
        MemoryTools(memory).search_nodes("the pan catches fire")
    code, out = check(mem, capsys)
    assert code == 1 and "the vector table cannot be read" in out
    assert cli("repair", "--memory", str(mem), capsys=capsys)[0] == 0
    assert check(mem, capsys)[0] == 0
    assert searchable(mem) == {"kitchen", "k2"}


def test_memory_pointing_at_a_file_is_one_line(tmp_path, capsys):
    target = tmp_path / "notes.txt"
    target.write_text("hello")
    srt = tmp_path / "clip.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:03,000\nA cook chops onions.\n")
    for argv in (["info"], ["check"], ["import-captions", str(srt)]):
        code, _, err = cli(*argv, "--memory", str(target), capsys=capsys)
        assert code != 0 and "Traceback" not in err
        if argv[0] != "import-captions":
            line = err.strip()
            assert "\n" not in line and line.startswith(
                f"memtools {argv[0]}: error: {target} is a file, not a memory folder; pass ")
    with pytest.raises(ConfigError, match="is a file"):
        Memory.create(target, EMBEDDER)
    with pytest.raises(MemoryNotFound, match="is a file"):
        Memory.open(target)
    assert target.read_text() == "hello"


def test_unwritable_memory_path_is_one_line(tmp_path, capsys):
    if os.geteuid() == 0:
        target = "/proc/memtools-cannot-write-here/memory"  # even root cannot make folders in /proc
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = str(locked / "memory")
    with pytest.raises(ConfigError, match="not a writable folder"):
        Memory.create(target, EMBEDDER)
    srt = tmp_path / "clip.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:03,000\nA cook chops onions.\n")
    code, _, err = cli("import-captions", str(srt), "--memory", target, capsys=capsys)
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_memory_under_a_file_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="not a writable folder"):
        Memory.create(blocker / "memory", EMBEDDER)


def test_rows_and_manifest_drift_are_found_per_video_and_repaired(mem, capsys):
    from memtools.store.catalog.manifest import read_manifest, write_manifest

    with Memory.open(mem, EMBEDDER) as memory:
        memory.vectors_unchecked.nodes().delete("id = 'k2/macro_0001'")
    manifest = read_manifest(mem)
    entry = manifest.videos["kitchen"]
    entry.counts["entity"] = 99  # the entry drifts from the graph (the sums with it)
    manifest.totals = manifest.catalog.edit({"kitchen": entry}, (), manifest.generation)
    write_manifest(mem, manifest)
    (mem / "frames" / "ghost").mkdir(parents=True)
    (mem / "frames" / "ghost" / "kf.jpg").write_bytes(b"x")
    code, out = check(mem, capsys)
    assert code == 1
    assert "k2: 1 searchable node(s) have no vector row, e.g. k2/macro_0001" in out
    assert "kitchen: manifest counts differ from the graph (entity 99 vs 7)" in out
    assert "frames of 1 video(s) the manifest does not list: frames/ghost" in out
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(ToolError, match="holds 37 rows but the manifest"):
        MemoryTools(memory).search_nodes("fire")
    code, out, _ = cli("repair", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "recounted video 'kitchen'" in out and "removed frames/ghost" in out
    assert check(mem, capsys)[0] == 0 and not (mem / "frames" / "ghost").exists()


def test_check_reports_missing_keyframe_files_it_cannot_rebuild(tmp_path, capsys):
    from mcp_support import with_keyframes

    path = tmp_path / "memory"
    with Memory.create(path, EMBEDDER) as memory:
        memory.write_video(with_keyframes(kitchen_graph(), path))
    (path / "frames" / "kitchen" / "kf_0003.jpg").unlink()
    code, out = check(path, capsys)
    assert code == 1 and "kitchen: 1 keyframe image(s) missing, e.g. frames/kitchen/kf_0003.jpg" in out
    assert "inspect_frames falls back to the source video" in out
    from memtools.store.catalog.manifest import read_manifest

    assert read_manifest(path).videos["kitchen"].status == "ready"


def test_langchain_tools_answer_with_the_damage(mem):
    import shutil

    from memtools.langchain import as_langchain_tools

    shutil.rmtree(mem / "vectors")
    with Memory.open(mem, EMBEDDER) as memory:
        search = {t.name: t for t in as_langchain_tools(memory)}["search_nodes"]
        message = search.invoke({"type": "tool_call", "name": "search_nodes", "args": {"query": "fire"}, "id": "1"})
    assert message.status == "error"
    assert "vectors/ is missing" in message.content and "memtools repair --memory" in message.content


def test_lost_full_text_index_is_rebuilt(mem, capsys):
    with Memory.open(mem, EMBEDDER) as memory:
        table = memory.vectors_unchecked.nodes()
        table.drop_index(next(ix.name for ix in table.list_indices() if tuple(ix.columns) == ("text",)))
    code, out = check(mem, capsys)
    assert code == 1 and "the full-text index is missing" in out
    assert cli("repair", "--memory", str(mem), capsys=capsys)[0] == 0
    assert check(mem, capsys)[0] == 0 and searchable(mem) == {"kitchen", "k2"}


def test_embedder_dimension_disagreeing_with_the_vectors_is_reported(mem, capsys):
    from memtools.store.catalog.manifest import read_manifest, write_manifest

    manifest = read_manifest(mem)
    manifest.embedder.dim = 32
    write_manifest(mem, manifest)
    code, out = check(mem, capsys)
    assert code == 1 and "the vector table holds 64-dimensional vectors but the manifest says the embedder " \
        "test:hash-64 makes 32" in out
