"""One memory's ``jobs.json`` shared by several books and processes: no job lost, none resumed twice, damage set aside.

Two ``memtools serve --allow-writes`` on one memory each keep a ``JobBook``; these tests use books
in this process and in child processes (``python -c``), which is what two servers are to the file.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs_support import server_env
from memtools.jobs import JobBook
from memtools.jobs.book import Job

CHILD = """
import json, sys, time
from pathlib import Path
from memtools.jobs import JobBook
folder, go, done = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
while not go.exists():
    time.sleep(0.005)
book = JobBook(folder)
{body}
"""

UPDATES = CHILD.format(body="""
for i in range(50):
    job = book.new(f"{sys.argv[4]}-{i}.mp4")
    book.update(job.job_id, calls=i + 1)
""")

CLAIM = CHILD.format(body="""
print(json.dumps([j.job_id for j in book.claim_unfinished()]), flush=True)
while not done.exists():  # stay alive (owning what was claimed) until the other child has claimed too
    time.sleep(0.01)
""")


def children(tmp_path: Path, code: str, count: int = 2) -> list[subprocess.Popen]:
    """``count`` processes running ``code`` on ``tmp_path``, started together (they wait for one file)."""
    go, done = tmp_path / "go", tmp_path / "done"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(go), str(done), f"p{n}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=server_env())
             for n in range(count)]
    time.sleep(1.0)  # past their imports
    go.touch()
    return procs


def test_two_books_on_one_folder_each_add_a_job_and_both_are_kept(tmp_path):
    first, second = JobBook(tmp_path), JobBook(tmp_path)  # two servers, each with the book it read at start
    one = first.new("one.mp4")
    two = second.new("two.mp4")
    assert {j.job_id for j in first.all()} == {one.job_id, two.job_id}  # a reader sees the other's job
    assert second.get(one.job_id) is not None
    assert {j.job_id for j in JobBook(tmp_path).all()} == {one.job_id, two.job_id}  # and after a restart


def test_an_unsaved_change_is_kept_when_another_book_writes_meanwhile(tmp_path):
    first, second = JobBook(tmp_path), JobBook(tmp_path)
    mine = first.new("one.mp4")
    first.update(mine.job_id, save=False, progress=0.5, stage="extract")
    theirs = second.new("two.mp4")
    assert first.get(mine.job_id).progress == 0.5  # re-read for the other's job, the own change on top
    first.save()
    reread = {j.job_id: j for j in JobBook(tmp_path).all()}
    assert reread[mine.job_id].progress == 0.5 and theirs.job_id in reread


def test_two_processes_making_50_changes_each_at_once_lose_none(tmp_path):
    procs = children(tmp_path, UPDATES)
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    jobs = JobBook(tmp_path).all()
    assert len(jobs) == 100
    for name in ("p0", "p1"):
        calls = sorted(j.calls for j in jobs if j.source.startswith(name))
        assert calls == list(range(1, 51)), name  # every job, and every job's last update


def test_two_processes_starting_at_once_never_claim_the_same_job(tmp_path):
    left = [Job(job_id=f"job_{n}", source=f"{n}.mp4", state="running" if n % 2 else "queued") for n in range(6)]
    (tmp_path / "jobs.json").write_text(json.dumps({"version": 1, "jobs": [j.model_dump() for j in left]}))
    procs = children(tmp_path, CLAIM)
    claimed = [json.loads(proc.stdout.readline() or "null") for proc in procs]
    (tmp_path / "done").touch()
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    assert None not in claimed
    assert sorted(claimed[0] + claimed[1]) == [j.job_id for j in left]  # each once: one child took them all
    assert [] in claimed


def test_a_job_is_resumed_only_when_the_process_that_owns_it_is_gone(tmp_path):
    owner, other = JobBook(tmp_path), JobBook(tmp_path)
    job = owner.new("talk.mp4")
    assert other.claim_unfinished() == []  # its owner is alive: it builds the job
    owner.close()  # a server that stopped (a killed one's lock goes with the process)
    resumed = other.claim_unfinished()
    assert [j.job_id for j in resumed] == [job.job_id] and resumed[0].state == "queued"
    assert JobBook(tmp_path).claim_unfinished() == []  # now owned by `other`
    assert "owner" not in other.get(job.job_id).model_dump()  # clients never see who builds it


def test_a_process_that_ended_leaves_its_job_to_the_next_start(tmp_path):
    code = CHILD.format(body="book.new('talk.mp4')")
    (tmp_path / "go").touch()
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(tmp_path / "go"), "x"], env=server_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert [j.source for j in JobBook(tmp_path).claim_unfinished()] == ["talk.mp4"]
    assert len(list((tmp_path / "jobs.owners").iterdir())) == 1  # this book's: the ended child's was swept


DAMAGED = {
    "a list": b"[]", "a list of numbers": b"[1, 2]", "a number": b"3", "a string": b'"jobs"', "null": b"null",
    "no jobs": b'{"version": 1}', "jobs not a list": b'{"jobs": {"a": 1}}', "a job that is a number": b'{"jobs": [1]}',
    "a job of the wrong types": b'{"jobs": [{"job_id": 5, "source": ["x"]}]}', "cut short": b'{"version": 1, "jobs": [',
    "not UTF-8": b'{"jobs": [{"job_id": "\xff\xfe", "source": "a"}]}', "empty": b"",
}


@pytest.mark.parametrize("content", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_damaged_book_of_any_shape_is_set_aside_with_a_warning(tmp_path, caplog, content):
    (tmp_path / "jobs.json").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="memtools.jobs"):
        book = JobBook(tmp_path)
    assert book.all() == []
    aside = list(tmp_path.glob("jobs.json.damaged-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == content  # kept for a person to look at
    assert any("damaged" in r.getMessage() and aside[0].name in r.getMessage() for r in caplog.records)
    job = book.new("talk.mp4")
    assert [j.job_id for j in JobBook(tmp_path).all()] == [job.job_id]


def test_a_runner_starts_on_a_list_shaped_book(tmp_path):
    from memtools.builder import BuildConfig
    from memtools.builder.settings import BuildSettings
    from memtools.builder.testing import scripted_vlm
    from memtools.embed.testing import TestEmbedder
    from memtools.jobs import JobRunner, SourcePolicy
    from memtools.store import Memory

    with Memory.create(tmp_path / "mem", TestEmbedder(64)) as memory:
        (memory.path / "jobs.json").write_text("[1, 2]")
        runner = JobRunner(memory, BuildSettings(config=BuildConfig.short()), SourcePolicy(roots=[tmp_path]),
                           vlm=scripted_vlm())
        assert runner.start() == [] and runner.jobs() == []
        runner.close()
        assert len(list(memory.path.glob("jobs.json.damaged-*"))) == 1
