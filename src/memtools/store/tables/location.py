"""Where a memory's lance tables live: ``vectors/`` in the memory folder, or object storage.

A memory created with ``tables="s3://bucket/prefix"`` (also ``gs://``, ``az://``) records
that URI in its manifest; the graph, the manifest and the frames stay in the folder. Lance
talks to the store itself and takes credentials from the usual environment variables:

* S3 and S3-compatible servers (MinIO, Ceph, moto): ``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY`` (``AWS_SESSION_TOKEN``), ``AWS_REGION``, ``AWS_ENDPOINT_URL``
  for a server other than AWS; an ``http://`` endpoint is allowed (a local server), or set
  ``AWS_ALLOW_HTTP=true``.
* Google Cloud Storage: ``GOOGLE_SERVICE_ACCOUNT`` (a key file) or the default credentials.
* Azure: ``AZURE_STORAGE_ACCOUNT_NAME`` and ``AZURE_STORAGE_ACCOUNT_KEY`` (or a SAS token).

The same rules as on disk hold: one writer process (the one that holds the memory folder's
lock), readers anywhere that can see the folder and the bucket.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

from memtools.errors import ConfigError

VECTORS_DIR = "vectors"
SCHEMES = ("s3", "gs", "az")


def is_remote(location: str | os.PathLike) -> bool:
    return isinstance(location, str) and "://" in location


def check_tables_uri(uri: str) -> str:
    """``uri`` without a trailing slash, or ``ConfigError`` saying what a tables URI looks like."""
    parsed = urlparse(uri)
    if parsed.scheme not in SCHEMES or not parsed.netloc:
        raise ConfigError(f"--tables {uri!r} is not an object-storage URI; use s3://BUCKET/PREFIX (or gs://, az://), "
                          "or leave it out to keep the tables in the memory folder")
    return uri.rstrip("/")


def check_same_tables(folder: Path, have: str | None, want: str | None) -> None:
    """An existing memory opened with ``--tables``: it must name where the tables already are."""
    if want and check_tables_uri(want) != have:
        raise ConfigError(f"the memory at {folder} keeps its tables at {have or 'vectors/ in the folder'}, not "
                          f"{want}; leave --tables out to use it, or create a new memory")


def tables_location(memory_path: Path, tables: str | None) -> Path | str:
    """The folder (local) or URI (object storage) of a memory's lance tables."""
    return check_tables_uri(tables) if tables else Path(memory_path) / VECTORS_DIR


def storage_options(location: Path | str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Options lance needs beyond what it reads from the environment itself."""
    if not is_remote(location):
        return {}
    env = os.environ if environ is None else environ
    options: dict[str, str] = {}
    if str(location).startswith("s3://"):
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        if endpoint:
            options["aws_endpoint"] = endpoint
        if (endpoint or "").startswith("http://") or env.get("AWS_ALLOW_HTTP", "").lower() == "true":
            options["allow_http"] = "true"
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        if region:
            options["aws_region"] = region
    return options
