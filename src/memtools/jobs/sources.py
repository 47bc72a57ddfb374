"""Where ``add_video`` may read from: files under the roots the server was started with, URLs only when allowed.

    policy = SourcePolicy(roots=[Path("~/Videos").expanduser()], allow_urls=True, url_hosts=("media.lan",))
    path = policy.check_path("holiday/beach.mp4")      # a regular file inside a root, or SourceRefused
    url = policy.check_url("https://example.com/a.mp4") # http(s) to a public address, or SourceRefused

A path is resolved (symlinks followed) before it is compared with the roots, so neither ``..``
nor a symlink can lead out of them; device files, FIFOs and folders are refused. A URL's host is
resolved and every address it resolves to must be public: loopback, private, link-local,
multicast and reserved addresses are refused unless the host is allowed by name
(``--allow-url-host``). ``download`` fetches with httpx and checks every redirect's target the same
way. (The address is looked up again when httpx connects; a name server that answers differently
within that moment is not caught: allow URLs only where you trust the resolver.)
"""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from memtools.errors import MemtoolsError

MAX_DOWNLOAD_BYTES = 4 << 30
"""The largest video ``add_video`` downloads (4 GiB)."""
VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".mov", ".avi", ".webm", ".m4v", ".mpg", ".mpeg", ".ts", ".flv", ".wmv"})


class SourceRefused(MemtoolsError):
    """A video source ``add_video`` may not read; the message says why and what is allowed."""


@dataclass(frozen=True)
class SourcePolicy:
    """The roots files may come from, and whether (and from which hosts) URLs may."""

    roots: Sequence[Path] = ()
    allow_urls: bool = False
    url_hosts: Sequence[str] = field(default_factory=tuple)

    @property
    def enabled(self) -> bool:
        return bool(self.roots) or self.allow_urls

    def describe(self) -> str:
        where = [f"files under {', '.join(str(r) for r in self.roots)}"] if self.roots else []
        if self.allow_urls:
            where.append("http(s) URLs of public hosts" + (f" and of {', '.join(self.url_hosts)}"
                                                           if self.url_hosts else ""))
        return " or ".join(where) or "nothing (the server was started without --allow-root or --allow-urls)"

    def check(self, source: str) -> Path | str:
        """The checked source: a ``Path`` for a file, the URL text for a URL."""
        if not isinstance(source, str) or not source.strip():
            raise SourceRefused("give source: a video file path or an http(s) URL")
        if "://" in source:
            return self.check_url(source.strip())
        return self.check_path(source)

    def check_path(self, source: str) -> Path:
        if not self.roots:
            raise SourceRefused(f"this server adds no files (started without --allow-root); it accepts "
                                f"{self.describe()}")
        if "\x00" in source:
            raise SourceRefused("the path holds a NUL character")
        given = Path(os.path.expanduser(source))
        roots = [Path(r).resolve() for r in self.roots]
        candidates = [given] if given.is_absolute() else [root / given for root in roots]
        for candidate in candidates:
            resolved = candidate.resolve()
            inside = next((r for r in roots if resolved == r or r in resolved.parents), None)
            if inside is None:
                continue
            try:
                mode = os.stat(resolved).st_mode
            except OSError:
                raise SourceRefused(f"no file {source!r} under {inside}; give a path to an existing video "
                                    "file") from None
            if not stat.S_ISREG(mode):
                raise SourceRefused(f"{source!r} is not a regular file (a folder, device or pipe); give a "
                                    "video file") from None
            return resolved
        raise SourceRefused(f"{source!r} is outside the folders this server may read ({self.describe()}); "
                            "give a path inside one of them (no '..' or links leading out)")

    def check_url(self, url: str) -> str:
        if not self.allow_urls:
            raise SourceRefused(f"this server adds no URLs (started without --allow-urls); it accepts "
                                f"{self.describe()}")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SourceRefused(f"{url!r} is not an http(s) URL with a host")
        if parts.username or parts.password:
            raise SourceRefused("URLs with a user name or password are not accepted")
        self.addresses(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        return url

    def addresses(self, host: str, port: int) -> list[str]:
        """The host's addresses, each checked (allowed-by-name hosts skip the check)."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise SourceRefused(f"cannot resolve the host {host!r}; check the URL") from None
        found = sorted({str(info[4][0]) for info in infos})
        if host.lower().rstrip(".") in {h.lower().rstrip(".") for h in self.url_hosts}:
            return found
        for address in found:
            ip = ipaddress.ip_address(address.split("%")[0])
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            if not ip.is_global or ip.is_multicast:
                raise SourceRefused(f"{host!r} resolves to {address}, a loopback, private, link-local or reserved "
                                    "address; such hosts are refused unless the server allows them by name "
                                    "(--allow-url-host NAME)")
        return found


def download(policy: SourcePolicy, url: str, dest: Path, *, max_bytes: int = MAX_DOWNLOAD_BYTES) -> Path:
    """Fetch ``url`` into ``dest`` (written whole or not at all); redirects are checked like the URL itself."""
    import httpx

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    for _ in range(5):  # a few redirects, each checked
        policy.check_url(url)
        with httpx.Client(timeout=httpx.Timeout(30.0), follow_redirects=False) as client, \
                client.stream("GET", url) as response:
            if response.is_redirect:
                url = str(response.url.join(response.headers.get("location", "")))
                continue
            if response.status_code != 200:
                raise SourceRefused(f"{url} answered HTTP {response.status_code}; check the URL")
            size = 0
            with part.open("wb") as out:
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        part.unlink(missing_ok=True)
                        raise SourceRefused(f"{url} is larger than {max_bytes >> 20} MiB")
                    out.write(chunk)
            os.replace(part, dest)
            return dest
    raise SourceRefused(f"{url} redirects too often")


def download_name(url: str) -> str:
    """A safe file name for a downloaded video (its suffix kept when it is a video's)."""
    name = Path(urlsplit(url).path).name
    stem, suffix = os.path.splitext(name)
    clean = "".join(c if c.isalnum() or c in "-_" else "_" for c in stem)[:60] or "video"
    return clean + (suffix.lower() if suffix.lower() in VIDEO_SUFFIXES else ".mp4")
