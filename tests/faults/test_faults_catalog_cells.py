"""Issue 29, item 4: repair never destroys what another part still holds. One wrong cell of
``videos.sqlite`` (a status, the generation, the totals, the journal mode, a cell that is not what its
column holds) is found by ``memtools check``, refused by writes and tools in plain words naming the cell
and ``memtools repair``, and mended by repair from the part that holds the data (the graph), never by
deleting that data. Running out of memory while checking is that, not damage."""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fault_helpers import EMBEDDER, VIDEOS, check, cli, mem, searchable, template  # noqa: F401 - fixtures

from memtools.errors import MemoryDamaged
from memtools.store import Memory
from memtools.store.catalog.manifest import read_manifest
from memtools.store.catalog.videos import CATALOG
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools

TRACEBACKS = ("Traceback", "JSONDecodeError", "IndexError", "TypeError", "KeyError", "sqlite3")
AS_LIMIT = 2 * 2**30  # Python and memtools start in 2 GiB of address space; kuzu maps far more for its buffer pool


def edit(path: Path, sql: str) -> None:
    """Change the catalog behind memtools' back, as the audit did with the sqlite3 shell."""
    conn = sqlite3.connect(path / CATALOG, isolation_level=None)
    try:
        for row in conn.execute(sql):
            assert row  # a PRAGMA answers with a row
    finally:
        conn.close()


def plain(*texts: str) -> None:
    for text in texts:
        for word in TRACEBACKS:
            assert word not in text, f"{word} reached the user: {text}"


def vector_rows(path: Path) -> dict[str, int]:
    with Memory.open(path, EMBEDDER) as memory:
        vids = memory.vectors_unchecked.nodes().search().select(["video_id"]).limit(None).to_arrow()
    found: dict[str, int] = {}
    for vid in vids.column("video_id").to_pylist():
        found[vid] = found.get(vid, 0) + 1
    return found


def write_k3(path: Path) -> None:
    with Memory.open(path, EMBEDDER) as memory:
        memory.write_video(kitchen_graph("k3"))


def test_a_wrong_status_cell_keeps_the_video_the_graph_holds(mem, capsys):
    rows = vector_rows(mem)
    edit(mem, "UPDATE videos SET status = 'failed' WHERE id = 'kitchen'")
    code, out = check(mem, capsys)
    assert code == 1 and "video 'kitchen' is listed as failed but the graph holds it whole" in out, out
    assert "failed to build" not in out and "--forget-lost" not in out
    assert "which is not a ready video" not in out, "its rows are the graph's, not leftovers to delete"
    code, out, err = cli("repair", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "listed video 'kitchen' as ready again: the graph holds it whole" in out, out
    assert "removed" not in out, out
    assert vector_rows(mem) == rows, "repair deleted vector rows the graph holds"
    assert check(mem, capsys)[0] == 0
    entry = read_manifest(mem).videos["kitchen"]
    assert entry.status == "ready" and entry.counts["event"] == 5
    assert searchable(mem) == set(VIDEOS)
    write_k3(mem)
    assert check(mem, capsys)[0] == 0


@pytest.mark.parametrize(("sql", "found"), [
    ("UPDATE meta SET value = 999", f"{CATALOG} is at generation 999 but the manifest at 1"),
    ("UPDATE totals SET rows = rows + 5", f"{CATALOG}'s kept totals differ from its rows"),
    ("PRAGMA journal_mode = WAL", f"{CATALOG} is in WAL mode; it must use the rollback journal"),
])
def test_a_catalog_at_another_generation_with_other_totals_or_in_wal_mode_is_found_and_rebuilt(mem, capsys, sql,
                                                                                              found):
    edit(mem, sql)
    code, out = check(mem, capsys)
    assert code == 1 and found in out, out
    if "totals" not in sql:  # the write would skip its list of videos, or wait on a WAL file for ever
        with pytest.raises(MemoryDamaged, match="refusing to write") as refused:
            write_k3(mem)
        assert found in str(refused.value) and "memtools repair --memory" in str(refused.value)
        assert "k3" not in read_manifest(mem).videos
    code, out, err = cli("repair", "--memory", str(mem), capsys=capsys)
    assert code == 0 and f"wrote {CATALOG} again from its rows" in out, out
    plain(out, err)
    assert check(mem, capsys)[0] == 0
    assert (mem / CATALOG).read_bytes()[18:20] == b"\x01\x01", "the rollback journal again"
    write_k3(mem)
    assert check(mem, capsys)[0] == 0
    assert read_manifest(mem).videos["k3"].status == "ready"


@pytest.mark.parametrize(("sql", "cell"), [
    ("UPDATE videos SET counts = '{not json' WHERE id = 'k2'", "video 'k2' is damaged (column counts"),
    ("UPDATE videos SET counts = '[1, 2]' WHERE id = 'k2'", "video 'k2' is damaged (column counts"),
    ("UPDATE videos SET status = 'sideways' WHERE id = 'k2'", "video 'k2' is damaged (column status"),
    ("UPDATE videos SET keyframe_vectors = 'many' WHERE id = 'k2'", "video 'k2' is damaged (column keyframe_vectors"),
    ("DELETE FROM meta", "generation (table meta) is missing"),
])
def test_a_damaged_cell_is_named_everywhere_and_never_a_traceback(mem, capsys, sql, cell):
    edit(mem, sql)
    code, out = check(mem, capsys)
    assert code == 1 and cell in out and "memtools repair" in out, out
    plain(out)
    reads = [("tool", "list_videos"), ("tool", "get_summary", "--video-id", "k2"), ("info",)]
    for argv in reads:
        code, out, err = cli(*argv, "--memory", str(mem), capsys=capsys)
        plain(out, err)
        assert code == 0 or ("memtools repair --memory" in err and "damaged" in err), (argv, err)
    if "meta" in sql:  # an entry is read only where it is needed; the generation by every write
        with pytest.raises(MemoryDamaged, match="memtools repair --memory"):
            write_k3(mem)
    else:
        code, _, err = cli("tool", "list_videos", "--memory", str(mem), capsys=capsys)
        assert code == 1 and cell in err and "memtools repair --memory" in err, err
    code, out, err = cli("repair", "--memory", str(mem), capsys=capsys)
    plain(out, err)
    assert code == 0 and f"wrote {CATALOG} again from its rows" in out, out
    assert check(mem, capsys)[0] == 0
    assert searchable(mem) == set(VIDEOS), "the graph held k2: it is listed again, not dropped"
    assert read_manifest(mem).videos["k2"].counts["event"] == 5
    with Memory.open(mem, EMBEDDER) as memory:
        assert {v.video_id for v in MemoryTools(memory).list_videos().videos} == set(VIDEOS)
    write_k3(mem)
    assert check(mem, capsys)[0] == 0


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux counts it")
@pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")  # preexec_fn forks; the child execs
@pytest.mark.parametrize("command", ["check", "repair"])
def test_running_out_of_memory_while_checking_is_not_damage(mem, command):
    src = Path(__file__).resolve().parents[2] / "src"
    code = "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", code, command, "--memory", str(mem)], capture_output=True,
                          text=True, timeout=180, preexec_fn=_limited, env={**os.environ, "PYTHONPATH": str(src)})
    text = done.stdout + done.stderr
    plain(text)
    assert done.returncode == 1 and "ran out of memory" in text and "ulimit -v" in text, text
    assert "damaged" not in text.replace("not damaged", "") and "--forget-lost" not in text, text
    assert not (mem / "graph.kuzu.damaged").exists()
    assert searchable(mem) == set(VIDEOS)
