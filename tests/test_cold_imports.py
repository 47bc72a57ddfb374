"""What a cold command imports (issue 34, item 4): a navigation call needs no model, so it loads no
builder, search engine or front end. Timing is the benchmark's (benchmarks/cold_start.py); this
guards the imports that made most of it."""

from __future__ import annotations

import subprocess
import sys

# a navigation command, run as `memtools tool get_summary` runs, then the heavy modules it loaded
NAVIGATION = """
import sys
from memtools.cli import main
code = main(["tool", "get_summary", "--memory", sys.argv[1], "--video-id", "kitchen"])
heavy = ("lancedb", "langgraph", "langchain_core", "mcp", "httpx", "cv2", "tokenizers", "safetensors", "bm25s",
         "scipy", "memtools.builder", "memtools.jobs.runner", "memtools.perception")
print("LOADED", code, ",".join(m for m in heavy if m in sys.modules))
"""


def test_a_navigation_command_imports_no_model_builder_or_front_end(kitchen_memory_path):
    out = subprocess.run([sys.executable, "-c", NAVIGATION, str(kitchen_memory_path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Video kitchen" in out.stdout
    assert out.stdout.splitlines()[-1].split(" ", 2)[1:] == ["0", ""]


def test_the_job_names_still_load_from_the_package():
    # memtools.jobs loads its runner on first use (so `memtools.jobs.arguments` stays light)
    code = ("import sys, memtools.jobs.arguments; before = 'memtools.jobs.runner' in sys.modules\n"
            "from memtools.jobs import JobRunner, SourcePolicy, Job\n"
            "import memtools.jobs as jobs\n"
            "print(before, JobRunner.__module__, SourcePolicy.__module__, Job.__module__, hasattr(jobs, 'Nope'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "memtools.jobs.runner", "memtools.jobs.sources", "memtools.jobs.book",
                                  "False"]


def test_the_mcp_server_does_not_import_the_sdks_client():
    # the SDK's package __init__ imports its client session too (~0.4 s of `memtools serve`'s start)
    code = ("import sys, memtools.mcp\n"
            "from memtools.mcp.server import build_server\n"
            "server_only = 'mcp.client.session' not in sys.modules\n"
            "from mcp import ClientSession, types\n"  # the package's own names still load, on first use
            "print(server_only, ClientSession.__name__, types.Tool.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "ClientSession", "Tool"]
