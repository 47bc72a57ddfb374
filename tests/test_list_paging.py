"""list_videos pages through a large library; every "more" line names a call that gets more."""

from __future__ import annotations

import re

import pytest

from memtools.cli import main
from memtools.embed.testing import TestEmbedder
from memtools.errors import ToolError
from memtools.store import Memory
from memtools.store.catalog.manifest import VideoEntry, read_manifest, write_manifest
from memtools.tools import TOOL_SPECS, MemoryTools

N = 436  # the library of the issue: list_videos showed 158 and cut the rest with no way to page


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    path = tmp_path_factory.mktemp("library") / "memory"
    Memory.create(path, TestEmbedder(8)).close()
    manifest = read_manifest(path)
    entries = {f"vid_{i:04d}": VideoEntry(title=f"Episode {i} of a long cooking series " * 2, duration=60.0 * i,
                                          status="ready" if i % 7 else "building")
               for i in range(N)}  # listing reads the list of videos only; the videos need no graph
    manifest.totals = manifest.catalog.apply(entries, (), manifest.generation + 1)
    manifest.generation += 1
    write_manifest(path, manifest)
    return path


@pytest.fixture()
def tools(library):
    with Memory.open(library, TestEmbedder(8)) as memory:
        yield MemoryTools(memory)


def _follow(tools: MemoryTools, **args) -> list[str]:
    """Every video id, by calling exactly what each page's "More:" line says."""
    seen: list[str] = []
    while True:
        page = tools.list_videos(**args)
        text = page.render()
        shown = re.findall(r"^- (\S+) ", text, flags=re.M)
        assert shown, text
        seen += shown
        more = re.search(r"More: (list_videos\((.*?)\))", text)
        if more is None:
            return seen
        call = more.group(1)
        args = TOOL_SPECS["list_videos"].args.model_validate(eval(f"dict({more.group(2)})")).model_dump()  # noqa: S307
        assert call.startswith("list_videos(offset=")


def test_paging_by_the_more_lines_reaches_every_video_once(tools):
    ids = _follow(tools)
    assert ids == sorted(f"vid_{i:04d}" for i in range(N))
    assert len(tools.list_videos().render()) < 8000


def test_query_filters_by_id_or_title_and_pages_too(tools):
    page = tools.list_videos(query="VID_01")
    assert page.total == 100 and [v.video_id for v in page.videos][:2] == ["vid_0100", "vid_0101"]
    assert _follow(tools, query="vid_01", limit=30) == [f"vid_{i:04d}" for i in range(100, 200)]
    assert [v.video_id for v in tools.list_videos(query="episode 435 ").videos] == ["vid_0435"]
    assert "No video id or title contains 'nothing'" in tools.list_videos(query="nothing").render()


def test_a_page_says_where_it_is(tools):
    text = tools.list_videos(offset=430, limit=50).render()
    assert text.startswith(f"Videos 431-{N} of {N}:") and "More:" not in text
    assert "(building)" in text
    assert "No videos past offset 500" in tools.list_videos(offset=500).render()


@pytest.mark.parametrize("args, message", [
    ({"limit": 0}, "limit"), ({"limit": 1000}, "limit"), ({"offset": -1}, "offset"),
])
def test_bad_paging_arguments_are_tool_errors(tools, args, message):
    with pytest.raises(ToolError, match=message):
        tools.list_videos(**args)
    with pytest.raises(Exception, match=message):
        TOOL_SPECS["list_videos"].args.model_validate(args)


def test_summary_and_info_no_longer_claim_list_videos_lists_everything(tools, library, capsys):
    with pytest.raises(ToolError) as err:
        tools.get_summary()
    assert "see them all" not in str(err.value) and "query=" in str(err.value)
    assert main(["info", "--memory", str(library)]) == 0
    out = capsys.readouterr().out
    more = re.search(r"`memtools (tool list_videos .*?)`", out).group(1).split()
    assert "lists all" not in out and "--offset" in more
    assert main(more) == 0
    listed = capsys.readouterr().out
    assert listed.startswith("Videos 21-70 of 436:") and "- vid_0020 " in listed


def test_a_page_is_read_from_the_catalog_as_a_reader_at_its_generation_sees_it(tmp_path):
    """The page and the count come from SQL (only the page's rows are read), with the same matching
    as before: any case, non-ASCII letters folded too, ids or titles."""
    path = tmp_path / "memory"
    Memory.create(path, TestEmbedder(8)).close()
    manifest = read_manifest(path)
    titles = {"a-ÉTÉ": "Un été à Paris", "b-winter": "WINTER walk", "c-été": "Notes", "d-other": "nothing"}
    entries = {vid: VideoEntry(title=title, duration=60.0) for vid, title in titles.items()}
    manifest.totals = manifest.catalog.apply(entries, (), manifest.generation + 1)
    manifest.generation += 1
    write_manifest(path, manifest)
    with Memory.open(path, TestEmbedder(8)) as memory:
        tools = MemoryTools(memory)
        found = tools.list_videos(query="été")
        assert [v.video_id for v in found.videos] == ["a-ÉTÉ", "c-été"] and found.total == 2
        assert [v.video_id for v in tools.list_videos(query="Winter").videos] == ["b-winter"]
        second = tools.list_videos(offset=1, limit=2)
        assert [v.video_id for v in second.videos] == ["b-winter", "c-été"] and second.total == 4
        later = read_manifest(path)  # a write after the reader's generation: the reader's page stays as it was
        later.totals = later.catalog.apply({"e-new": VideoEntry(title="été again")}, ["d-other"], later.generation + 1)
        assert [vid for vid, _ in memory.manifest.videos.page(0, 10, "")[0]] == list(titles)
        assert memory.manifest.videos.page(0, 10, "été")[1] == 2
