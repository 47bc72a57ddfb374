"""Helpers of the caption-import tests (test_import_checks.py, test_import_video_ids.py): run
``memtools import-captions`` through the CLI, write a dense-caption JSON file."""

from __future__ import annotations

import json

from memtools.cli import main


def run_import(tmp_path, capsys, *files, extra=()):
    """(exit code, stdout, stderr, memory path) of an import into ``tmp_path / "m"``."""
    memory = tmp_path / "m"
    code = main(["import-captions", *map(str, files), "--memory", str(memory), "--embedder", "test:32", *extra])
    out = capsys.readouterr()
    return code, out.out, out.err, memory


def dense_file(path, videos):
    path.write_text(json.dumps(videos), encoding="utf-8")
    return path


def one_caption(sentence="ok", start=1.0, end=2.0, duration=9.0):
    return {"duration": duration, "timestamps": [[start, end]], "sentences": [sentence]}
