"""What ``memtools repair`` may change, as it was before (``RepairSnapshot``): the manifest's and the
catalog's bytes, each lance table's version, the tables swapped in and the files moved aside; and
how a failed repair puts all of it back, each step on its own."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.store.catalog.manifest import MANIFEST
from memtools.store.catalog.videos import CATALOG
from memtools.store.integrity.lance_check import table_folder

if TYPE_CHECKING:
    from memtools.store.catalog.parts import MemoryParts
    from memtools.store.integrity.table_swap import AsideTable

log = logging.getLogger("memtools.store.integrity.repair")


@dataclass
class RepairSnapshot:
    """What repair may change, as it was: the manifest's bytes and each lance table's version."""

    manifest: bytes
    catalog: bytes | None  # videos.sqlite as it was (None: there was none)
    versions: dict[str, tuple[Any, int | None, bool]]  # name -> (handle, version or None, existed)
    swaps: list[AsideTable] = field(default_factory=list)
    moved: list[tuple[Path, Path]] = field(default_factory=list)  # (original, where it went)

    @classmethod
    def take(cls, memory: MemoryParts) -> RepairSnapshot:
        handles: dict[str, Any] = {"nodes": memory.vectors_unchecked, "entities": memory.entities}
        if memory.keyframes is not None:
            handles["keyframes"] = memory.keyframes
        versions = {}
        for name, handle in handles.items():
            try:
                version = handle.version()
            except Exception:  # noqa: BLE001 - unreadable: only ever replaced by a swap, never edited
                version = None
            versions[name] = (handle, version, version is not None or table_exists(memory, name))
        catalog = memory.path / CATALOG
        return cls((memory.path / MANIFEST).read_bytes(), catalog.read_bytes() if catalog.is_file() else None,
                   versions)

    def restore(self, memory: MemoryParts) -> None:
        """Put everything back; each step on its own, so one that fails does not stop the others."""
        for swap in reversed(self.swaps):
            with logged(f"putting the old {swap.name} table back"):
                swap.undo_swap()
        swapped = {swap.name for swap in self.swaps}
        for name, (handle, version, existed) in self.versions.items():
            if version is not None or not existed:
                with logged(f"rolling the {name} table back"):
                    handle.refresh()
                    if version is not None and name not in swapped and version_of(handle) == version:
                        continue  # untouched: left byte for byte as it was
                    if version is not None or table_exists(memory, name):
                        handle.restore(version)  # None: it did not exist, so the repair's new table goes
        for original, moved in self.moved:
            with logged(f"putting {original.name} back"):
                original.unlink(missing_ok=True)
                moved.rename(original)
        with logged(f"putting {CATALOG} back"):
            put_back(memory.path / CATALOG, self.catalog)
        with logged("putting the manifest back"):
            put_back(memory.path / MANIFEST, self.manifest)

    def forget_old(self) -> None:
        for swap in self.swaps:
            swap.forget_old()


def put_back(file: Path, content: bytes | None) -> None:
    """``file`` with these bytes again, by rename (None: it did not exist)."""
    if content is None:
        file.unlink(missing_ok=True)
        return
    if file.is_file() and file.read_bytes() == content:
        return
    fd, tmp = tempfile.mkstemp(prefix=".memtools-", suffix=".restore", dir=file.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, file)


def version_of(handle: Any) -> int | None:
    try:
        return handle.version()
    except Exception:  # noqa: BLE001 - unreadable now: roll it back
        return None


def table_exists(memory: MemoryParts, name: str) -> bool:
    index = memory.vectors_unchecked
    folder = table_folder(index, name)
    if folder is not None:
        return folder.is_dir()
    try:
        return name in index._db.list_tables().tables
    except Exception:  # noqa: BLE001 - unreachable: nothing to roll back there
        return False


@contextlib.contextmanager
def logged(doing: str):
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - a rollback step that fails is logged; the others still run
        log.warning("repair: %s failed: %s", doing, exc)
        log.debug("repair: %s failed", doing, exc_info=exc)
