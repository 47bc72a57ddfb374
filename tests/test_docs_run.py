"""Every shell and Python block of README.md and docs/ runs, in page order, on copies of the sample memories
(the quickstart's, made once per session), its shown output compared where the page shows one; what cannot run
offline says why with a mark before the block (tests/docs_blocks.py, tests/docs_runner.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docs_blocks import pages_with_blocks, runnable_blocks, shown_output_problems
from docs_runner import PageRunner, Samples
from docs_support import REPO

PAGES = pages_with_blocks()


def _narration() -> list[tuple[float, str]]:
    spec = importlib.util.spec_from_file_location("make_narration", REPO / "examples/sample/make_narration.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.NARRATION)


@pytest.fixture(scope="module")
def samples(quickstart, tmp_path_factory) -> Samples:
    assert quickstart.done.returncode == 0, quickstart.done.stderr[-3000:]
    memory = quickstart.folder / "sample-memory"
    responses = REPO / "examples/sample/responses.jsonl"
    video = REPO / "examples/sample/sample.mp4"  # the quickstart wrote it
    from memtools.store import Memory

    with Memory.open(memory) as m:
        one_video = len(m.manifest.videos) == 1
    if not one_video:  # with the voice weights it also holds sample-again: the pages' own memories hold one video
        memory = tmp_path_factory.mktemp("sample") / "memory"
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        subprocess.run(["memtools", "build", str(video), "--memory", str(memory), "--replay", str(responses)],
                       check=True, capture_output=True, timeout=600, env=env)
    return Samples(quickstart.folder, memory, video, responses, _narration())


def test_every_block_runs_or_says_why_not():
    """A mark is readable, names a reason, and a skip-line names a line of its block; no block is left out
    silently (one whose every command is skipped says why for each)."""
    problems, blocks = [], [b for page in PAGES for b in runnable_blocks(page)]
    for block in blocks:
        problems += [f"{block.where}: {p}" for p in block.problems]
        commands = block.commands()
        if not commands:
            problems.append(f"{block.where}: a block with no command")
    assert not problems, "\n".join(problems)
    assert len(blocks) >= 40


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_page_runs(page, samples, tmp_path):
    run = PageRunner(page, samples, tmp_path).run()
    print("ran:", *run.ran, "not run:", *run.skipped, sep="\n  ")
    assert not run.failures, "\n\n".join(run.failures)


def test_shown_output_is_compared_loosely_but_line_by_line():
    shown = ["Activity 'I make coffee': 3 time(s) in 3 video(s); first mon ...", "...", "1. mon [match 0.94]"]
    assert not shown_output_problems(shown, "Activity 'I make coffee': 3 time(s) in 3 video(s); first mon [0:10]\n"
                                            "Days: x\n1. mon [match 0.91]\n")
    assert shown_output_problems(shown, "Activity 'I make coffee': 2 time(s) in 3 video(s); first mon\n"
                                        "1. mon [match 0.91]") == [shown[0]]
    assert shown_output_problems(shown[::-1], "Activity 'I make coffee': 3 time(s) in 3 video(s); first mon\n"
                                              "1. mon [match 0.91]")  # in the order shown


def test_a_failing_command_and_a_wrong_output_fail_the_page(samples, tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```bash\nmemtools tool get_summary --memory my-memory --video-id nope\n```\n\n"
                    "<!-- docs-run: skip (needs a hosted model) -->\n```bash\nmemtools ask x --model openai:m\n```\n\n"
                    "```text\n$ memtools tool list_videos --memory my-memory\nVideos 1-1 of 7:\n```\n",
                    encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    run = PageRunner(page, samples, work).run()
    assert len(run.failures) == 2, run.failures
    assert "exited 1" in run.failures[0] and "nope" in run.failures[0]
    assert "did not show:\n  Videos 1-1 of 7:" in run.failures[1]
    assert run.skipped == [f"{page}:6 (whole block): needs a hosted model"]


def test_marks_are_read(tmp_path):
    page = tmp_path / "page.md"
    page.write_text('<!-- docs-run: skip-line "--speech openai" (needs a hosted recogniser); needs faces -->\n'
                    "```bash\nmemtools build a.mp4 --speech openai\nmemtools info\npip install x\n```\n\n"
                    '<!-- docs-run: skip-line "nothing like it" (x); nonsense -->\n```bash\nls\n```\n',
                    encoding="utf-8")
    first, second = runnable_blocks(page)
    assert first.needs == ["faces"] and not first.problems
    assert [c.skipped for c in first.commands()] == ["needs a hosted recogniser", "", "installs packages"]
    assert second.problems == ["cannot read the docs-run mark at 'nonsense'",
                               "skip-line 'nothing like it' matches no line of the block"]


@pytest.mark.slow
def test_what_the_pages_say_of_the_quickstart_is_what_it_did(quickstart):
    """docs/install.md names every folder the quickstart writes; docs/faces.md the sample's keyframe count."""
    written = sorted(p.name for p in quickstart.folder.iterdir())
    install = (REPO / "docs/install.md").read_text(encoding="utf-8")
    sentence = re.search(r"The quickstart writes only (.*?) all\s+ignored by git", install, re.S)
    assert sentence and written == sorted(re.findall(r"`([\w-]+)/`", sentence.group(1))), written
    built = re.search(r"sample: .*?, (\d+) keyframes", quickstart.done.stdout)
    faces = re.search(r"(\d+) keyframes at the default rules", (REPO / "docs/faces.md").read_text(encoding="utf-8"))
    assert built and faces and faces.group(1) == built.group(1)
