"""The job runner in process: which URLs may be read, downloads, and --max-cost per job and per day."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from jobs_support import make_sample_video
from memtools.builder import BuildConfig
from memtools.builder.settings import BuildSettings
from memtools.builder.testing import scripted_vlm
from memtools.costs import PriceTable
from memtools.embed.testing import TestEmbedder
from memtools.jobs import JobBook, JobLimits, JobRunner, SourcePolicy, SourceRefused
from memtools.store import Memory

PRICES = PriceTable({"scripted": (1.0, 2.0)})


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("videos")
    make_sample_video(folder / "sample.mp4")
    (folder / "second.mp4").write_bytes((folder / "sample.mp4").read_bytes())
    return folder


def runner(memory: Memory, policy: SourcePolicy, limits: JobLimits | None = None) -> JobRunner:
    return JobRunner(memory, BuildSettings(config=BuildConfig.short()), policy, limits=limits, vlm=scripted_vlm())


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/a.mp4", "http://localhost:8000/a.mp4", "http://[::1]/a.mp4", "http://10.1.2.3/a.mp4",
    "http://192.168.0.7/a.mp4", "http://169.254.169.254/latest/meta-data", "https://0.0.0.0/a.mp4",
    "http://[::ffff:127.0.0.1]/a.mp4",
])
def test_urls_to_loopback_private_or_link_local_addresses_are_refused(url):
    with pytest.raises(SourceRefused, match="loopback, private, link-local"):
        SourcePolicy(allow_urls=True).check(url)


def test_urls_need_allow_urls_and_http_and_a_host_allowed_by_name_passes():
    with pytest.raises(SourceRefused, match="--allow-urls"):
        SourcePolicy(roots=[Path("/tmp")]).check("https://example.com/a.mp4")
    for bad in ("ftp://example.com/a.mp4", "file:///etc/passwd", "http://user:pw@example.com/a.mp4"):
        with pytest.raises(SourceRefused):
            SourcePolicy(allow_urls=True).check(bad)
    assert SourcePolicy(allow_urls=True, url_hosts=("localhost",)).check("http://localhost/a.mp4")


def test_a_url_allowed_by_name_is_downloaded_and_built(tmp_path, videos):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(videos))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with Memory.create(tmp_path / "mem", TestEmbedder(64)) as memory:
            jobs = runner(memory, SourcePolicy(allow_urls=True, url_hosts=("localhost",)))
            jobs.start()
            job = jobs.submit(f"http://localhost:{server.server_port}/sample.mp4", video_id="downloaded")
            done = jobs.wait(job.job_id, 600)
            jobs.close()
            assert done is not None and done.state == "done", done
            assert memory.video_ids() == ["downloaded"]
    finally:
        server.shutdown()


def test_max_cost_per_job_stops_the_build_and_says_how_to_resume(tmp_path, videos):
    with Memory.create(tmp_path / "mem", TestEmbedder(64)) as memory:
        jobs = runner(memory, SourcePolicy(roots=[videos]), JobLimits(max_cost_job=0.001, prices=PRICES))
        jobs.start()
        done = jobs.wait(jobs.submit("sample.mp4").job_id, 600)
        jobs.close()
        assert done is not None and done.state == "failed"
        assert "--max-cost" in (done.error or "") and "resumes" in (done.error or "")
        memory.refresh()
        assert memory.manifest.videos["sample"].status == "failed"  # nothing written; checkpoints kept to resume


def test_max_cost_per_day_counts_the_days_earlier_jobs(tmp_path, videos):
    with Memory.create(tmp_path / "mem", TestEmbedder(64)) as memory:
        first = runner(memory, SourcePolicy(roots=[videos]), JobLimits(prices=PRICES))
        first.start()
        one = first.wait(first.submit("sample.mp4").job_id, 600)
        first.close()
        assert one is not None and one.state == "done" and one.cost_usd
        limits = JobLimits(max_cost_day=one.cost_usd * 1.5, prices=PRICES)  # room for half a build more
        second = runner(memory, SourcePolicy(roots=[videos]), limits)
        second.start()
        two = second.wait(second.submit("second.mp4").job_id, 600)
        second.close()
        assert two is not None and two.state == "failed" and "--max-cost" in (two.error or "")
        assert JobBook(memory.path).spent_today() <= one.cost_usd * 1.5


def test_max_cost_without_a_price_for_the_model_fails_at_start(tmp_path, videos):
    from memtools.errors import ConfigError

    with Memory.create(tmp_path / "mem", TestEmbedder(64)) as memory, pytest.raises(ConfigError, match="price"):
        runner(memory, SourcePolicy(roots=[videos]), JobLimits(max_cost_job=1.0, prices=PriceTable({})))


def test_a_damaged_jobs_file_is_kept_aside_and_the_server_goes_on(tmp_path):
    (tmp_path / "jobs.json").write_text("{not json")
    book = JobBook(tmp_path)
    assert book.all() == [] and [p.name.split("-")[0] for p in tmp_path.glob("jobs.json.damaged-*")] == [
        "jobs.json.damaged"]
