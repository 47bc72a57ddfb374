"""Shared by the replica tests: a local S3 server (moto) on 127.0.0.1, a bucket per test, caption files."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")


@pytest.fixture(scope="module", name="s3_endpoint")
def s3_endpoint_fixture() -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def aws_env(endpoint: str) -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint}


@pytest.fixture(name="bucket")
def bucket_fixture(s3_endpoint, monkeypatch, request):
    """A fresh bucket named after the test; the AWS_* variables point this process at the local server."""
    for name, value in aws_env(s3_endpoint).items():
        monkeypatch.setenv(name, value)
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")  # parameters too: one bucket each
    if len(name) > 50:
        name = f"{name[:41].strip('-')}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=name)
    return name, client


def keys(client, bucket: str, prefix: str = "") -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", [])
                  if not o["Key"].endswith("/"))  # pyarrow leaves a folder marker where it deleted a folder


def caption_file(folder: Path, name: str, words: str) -> Path:
    """A two-caption SRT file whose video id is ``name``."""
    path = folder / f"{name}.srt"
    path.write_text(f"1\n00:00:00,000 --> 00:00:05,000\n{words} begins.\n\n"
                    f"2\n00:00:05,000 --> 00:00:10,000\n{words} ends.\n", encoding="utf-8")
    return path


def subprocess_env(endpoint: str, **extra: str) -> dict[str, str]:
    """This process's environment with the AWS_* variables, memtools' sources first on the path, offline models."""
    import memtools

    src = str(Path(memtools.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, **aws_env(endpoint), "PYTHONPATH": path, "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", **extra}
