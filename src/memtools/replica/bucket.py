"""The one seam over object storage for replicas: ``Bucket``, a prefix of an S3 (or S3-compatible) bucket.

Built on ``pyarrow.fs.S3FileSystem`` (pyarrow is already a dependency; no boto3). It follows the
conventions of ``memtools.store.tables.location``: credentials from the AWS default chain
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``, a role), ``AWS_REGION``, and
``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) for a server other than AWS (MinIO, Ceph, moto;
``http://`` allowed). pyarrow's errors are translated here, once, into ``ConfigError`` (the URI,
the bucket or the credentials are wrong: the user must act) or ``StoreError`` (a transfer failed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from memtools.errors import ConfigError, StoreError

CHUNK = 1 << 20
_STATUS_403 = re.compile(r"(?<![\d.:])403(?!\d)")  # the HTTP status, not a port or an address
CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")
CREDENTIALS_HINT = ("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or run with a role) and "
                    "AWS_REGION; for a server other than AWS also AWS_ENDPOINT_URL")


def is_replica_uri(location: object) -> bool:
    """Whether ``--memory`` names a published memory (``s3://...``) rather than a folder."""
    return isinstance(location, str) and location.startswith("s3://")


def parse_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` as ``(bucket, prefix)`` (no slashes at the ends), or ``ConfigError``."""
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ConfigError(f"{uri!r} is not an S3 URI: a published memory lives at s3://BUCKET/PREFIX "
                          "(S3 or an S3-compatible server such as MinIO, through AWS_ENDPOINT_URL)")
    prefix = parsed.path.strip("/")
    if not prefix:
        raise ConfigError(f"{uri!r} names a whole bucket: give a prefix for the memory, e.g. s3://{parsed.netloc}/"
                          "memories/NAME")
    return parsed.netloc, prefix


def has_credentials(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment names AWS credentials (a role on a cloud machine is found only by asking)."""
    env = os.environ if environ is None else environ
    if any(env.get(name) for name in CREDENTIAL_VARIABLES):
        return True
    home = Path(env.get("HOME", "~")).expanduser()
    files = [env.get("AWS_SHARED_CREDENTIALS_FILE", str(home / ".aws" / "credentials")),
             env.get("AWS_CONFIG_FILE", str(home / ".aws" / "config"))]
    return any(Path(f).is_file() for f in files)


@dataclass(frozen=True)
class Listed:
    """One object under the prefix: its key relative to the prefix, and its size in bytes."""

    key: str
    size: int


class Bucket:
    """``s3://bucket/prefix``: read, write, list and delete objects by keys relative to the prefix."""

    def __init__(self, uri: str, environ: Mapping[str, str] | None = None) -> None:
        self.uri = uri.rstrip("/")
        self.bucket, self.prefix = parse_uri(uri)
        self._environ = dict(os.environ if environ is None else environ)
        self._fs = _filesystem(self._environ)

    def _path(self, key: str) -> str:
        return f"{self.bucket}/{self.prefix}/{key}".rstrip("/")

    @contextlib.contextmanager
    def _translated(self, doing: str) -> Iterator[None]:
        try:
            yield
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise self._error(doing, exc) from exc

    def _error(self, doing: str, exc: OSError) -> Exception:
        text = str(exc)
        if "RESOURCE_NOT_FOUND" in text or "NoSuchKey" in text:  # gone between listing and reading
            return FileNotFoundError(text)
        if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text:
            return self._no_bucket(f"{doing} {self.uri}")
        # first: a failed connection's text names the endpoint, whose port may hold "403"
        if any(word in text for word in ("Couldn't connect", "connect to", "NETWORK_CONNECTION", "curlCode")):
            return ConfigError(f"cannot reach the S3 endpoint for {self.uri} ({doing}): check the network and "
                               f"AWS_ENDPOINT_URL ({self._environ.get('AWS_ENDPOINT_URL') or 'AWS'})")
        if any(word in text for word in ("INVALID_ACCESS_KEY_ID", "InvalidAccessKeyId")):
            return ConfigError(f"S3 refused {doing} {self.uri}: the endpoint does not know the access key "
                               f"{self._environ.get('AWS_ACCESS_KEY_ID') or '(from the AWS default chain)'}; "
                               f"{CREDENTIALS_HINT}")
        if any(word in text for word in ("SIGNATURE_DOES_NOT_MATCH", "SignatureDoesNotMatch")):
            return ConfigError(f"S3 refused {doing} {self.uri}: the secret key does not match the access key "
                               f"(AWS_SECRET_ACCESS_KEY is wrong, or the clock is far off); {CREDENTIALS_HINT}")
        if any(word in text for word in ("ACCESS_DENIED", "AccessDenied", "credentials", "Forbidden")) \
                or _STATUS_403.search(text):
            missing = "" if has_credentials(self._environ) else "no AWS credentials were found; "
            return ConfigError(f"S3 refused {doing} {self.uri}: {missing}{CREDENTIALS_HINT}, with rights to the "
                               f"bucket {self.bucket!r}")
        return StoreError(f"{doing} {self.uri} failed: {_first_line(text)}; try again")

    def _no_bucket(self, doing: str) -> ConfigError:
        return ConfigError(f"there is no bucket {self.bucket!r} at the S3 endpoint ({doing}); check the URI (and "
                           "AWS_ENDPOINT_URL for a server other than AWS), or create the bucket")

    def _missing(self, doing: str) -> None:
        """An object was not found: ``ConfigError`` when the bucket itself is gone (S3 answers a read in a bucket
        that does not exist as it answers one of a missing object)."""
        from pyarrow import fs

        with self._translated(doing):
            gone = self._fs.get_file_info(self.bucket).type == fs.FileType.NotFound
        if gone:
            raise self._no_bucket(f"{doing} {self.uri}")

    # --- reading ------------------------------------------------------------------------

    def check_bucket(self) -> None:
        """``ConfigError`` when the bucket does not exist or cannot be read."""
        from pyarrow import fs

        with self._translated("listing"):
            info = self._fs.get_file_info(self.bucket)
        if info.type == fs.FileType.NotFound:
            raise self._no_bucket(f"for {self.uri}")

    def read_bytes(self, key: str) -> bytes | None:
        """The object's bytes, or None when it does not exist (``ConfigError`` when the bucket does not)."""
        try:
            with self._translated("reading"), self._fs.open_input_stream(self._path(key)) as stream:
                return stream.read()
        except FileNotFoundError:
            self._missing("reading")
            return None

    def list(self, under: str = "") -> list[Listed]:
        """Every object under ``prefix/under`` (recursively), keys relative to the prefix."""
        from pyarrow import fs

        root = f"{self.bucket}/{self.prefix}/"
        selector = fs.FileSelector(self._path(under), recursive=True, allow_not_found=True)
        with self._translated("listing"):
            infos = self._fs.get_file_info(selector)
        return [Listed(i.path[len(root):], i.size or 0) for i in infos
                if i.type == fs.FileType.File and i.path.startswith(root)]

    def download(self, key: str, target: Path) -> tuple[int, str]:
        """Copy the object to the file ``target``; its size and sha256 (hex) as read."""
        digest, size = hashlib.sha256(), 0
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with (self._translated("downloading"), self._fs.open_input_stream(self._path(key)) as stream,
                  open(target, "wb") as out):
                while chunk := stream.read(CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
        except FileNotFoundError:
            self._missing("downloading")
            raise StoreError(f"{self.uri}/{key} is gone (a newer publish removed it?); the next poll retries") from None
        return size, digest.hexdigest()

    # --- writing ------------------------------------------------------------------------

    def write_bytes(self, key: str, data: bytes) -> None:
        """One object, written whole (S3 shows a new object only once complete)."""
        with self._translated("writing"), self._fs.open_output_stream(self._path(key)) as stream:
            stream.write(data)

    def upload(self, source: Path, key: str) -> None:
        with (self._translated("uploading to"), open(source, "rb") as handle,
              self._fs.open_output_stream(self._path(key)) as stream):
            while chunk := handle.read(CHUNK):
                stream.write(chunk)

    def copy(self, source: str, key: str, size: int) -> bool:
        """Copy the object ``source`` to ``key`` inside the store (no bytes through this machine); False when
        ``source`` is gone or is not ``size`` bytes."""
        try:
            with self._translated("copying inside"):
                if self._fs.get_file_info(self._path(source)).size != size:
                    return False
                self._fs.copy_file(self._path(source), self._path(key))
        except FileNotFoundError:
            return False
        return True

    def delete_under(self, under: str) -> None:
        """Remove every object under ``prefix/under`` (nothing there: nothing to do)."""
        with contextlib.suppress(FileNotFoundError), self._translated("deleting from"):
            self._fs.delete_dir(self._path(under))


def _filesystem(env: Mapping[str, str]):
    """pyarrow's S3 filesystem for this environment (endpoint, region; credentials from the default chain)."""
    from pyarrow import fs

    options: dict[str, object] = {"connect_timeout": 10, "request_timeout": 60,
                                  "retry_strategy": fs.AwsStandardS3RetryStrategy(max_attempts=3)}
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        options["endpoint_override"] = parsed.netloc + parsed.path.rstrip("/")
        options["scheme"] = parsed.scheme or "https"
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):  # else the SDK's chain (profile, role)
        options.update(access_key=env["AWS_ACCESS_KEY_ID"], secret_key=env["AWS_SECRET_ACCESS_KEY"],
                       session_token=env.get("AWS_SESSION_TOKEN") or None)
    try:
        return fs.S3FileSystem(**options)
    except OSError as exc:
        raise ConfigError(f"cannot set up S3 access: {_first_line(str(exc))}; {CREDENTIALS_HINT}") from exc


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"
