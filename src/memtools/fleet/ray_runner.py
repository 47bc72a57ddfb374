"""The Ray side of a fleet build: one Ray task per video, one named actor per model endpoint.

* ``perceive_task`` runs ``aperceive_video`` on a worker and returns the ``VideoBundle``.
  Ray retries it (``max_retries``) when the worker process dies or its node is lost; the
  retry resumes from the checkpoints the lost attempt saved under ``work/`` (which must be
  on storage every node sees), so no answered model call is asked again. An exception the
  build raises itself (an unreadable file, a model that keeps failing) is not retried: the
  video is reported as failed and the others go on.
* ``EndpointSlots`` is an async actor named ``memtools-endpoint:<base URL>`` in namespace
  ``memtools``: every request of every worker takes one of its ``size`` slots. A slot
  whose holder died is given back after ``lease_sec``.

Ray is optional: ``pip install 'memtools[ray]'``.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import warnings
from typing import Any

from memtools.builder.bundle import BuildFolder, VideoBundle, aperceive_video
from memtools.builder.bundle_vectors import WorkerEmbedder, video_vectors
from memtools.builder.config import BuildConfig
from memtools.errors import ConfigError
from memtools.fleet.limits import LimitedVLM, SlotStats
from memtools.perception.base import run_sync

NAMESPACE = "memtools"
LEASE_SEC = 900.0  # longer than any single model request is allowed to take


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("building with --ray needs Ray: pip install 'memtools[ray]' "
                          "(or leave --ray out to build in this process)") from exc
    return ray


class EndpointSlots:
    """Async Ray actor: ``size`` requests in flight to one endpoint across the whole cluster."""

    def __init__(self, size: int, lease_sec: float = LEASE_SEC) -> None:
        self.size, self.lease_sec = size, lease_sec
        self._held: dict[int, float] = {}
        self._ids = itertools.count()
        self._changed = asyncio.Event()
        self._calls = self._tokens = self._peak = 0

    def resize(self, size: int) -> None:
        self.size = size
        self._changed.set()

    async def acquire(self) -> int:
        while len(self._held) >= self.size:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=1.0)
            except TimeoutError:
                cutoff = time.monotonic() - self.lease_sec
                for token, since in list(self._held.items()):
                    if since < cutoff:  # its worker died holding it
                        del self._held[token]
        token = next(self._ids)
        self._held[token] = time.monotonic()
        self._peak = max(self._peak, len(self._held))
        return token

    def release(self, token: int, tokens: int) -> None:
        if self._held.pop(token, None) is not None:
            self._changed.set()
        self._calls += 1
        self._tokens += tokens

    def stats(self) -> SlotStats:
        return SlotStats(self._calls, self._tokens, len(self._held), self._peak)


class _ActorSlots:
    """The worker's view of an ``EndpointSlots`` actor (``memtools.fleet.limits.Slots``)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def acquire(self) -> int:
        return await self.actor.acquire.remote()

    async def release(self, token: int, tokens: int) -> None:
        await self.actor.release.remote(token, tokens)


def endpoint_slots(key: str, size: int):
    """The cluster's slots actor for endpoint ``key`` (made on first use, then shared by every driver)."""
    ray = import_ray()
    actor_class = ray.remote(num_cpus=0, max_restarts=-1)(EndpointSlots)
    actor = actor_class.options(name=f"memtools-endpoint:{key}", namespace=NAMESPACE, get_if_exists=True,
                                max_concurrency=10_000).remote(size)
    ray.get(actor.resize.remote(size))
    return actor


def perceive_task(folder: BuildFolder, make_vlm: Any, source: str, video_id: str, config: BuildConfig,
                  slots: Any, embedder: WorkerEmbedder | None = None) -> VideoBundle:
    """The body of one video's Ray task: perception, then (``embedder``) the texts' vectors."""
    vlm = LimitedVLM(make_vlm(), _ActorSlots(slots))
    bundle = run_sync(lambda: aperceive_video(folder, vlm, source, video_id, config=config))
    if embedder is not None and bundle.graph is not None:
        bundle.vectors = video_vectors(bundle.graph, embedder.load())
    return bundle


def start_ray(ray: Any, address: str | None) -> None:
    """Join the cluster at ``address``, or start a local one. Starting one forks this process to run
    Ray's daemons, and lance (loaded by then wherever a memory was opened) warns at every fork that it
    is not fork-safe: true of a child that goes on in Python, not of these, which exec at once. So
    that warning is left out here, and only here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="lance is not fork-safe", category=UserWarning)
        ray.init(address=address, namespace=NAMESPACE, log_to_driver=False, configure_logging=False)


class RayExecutor:
    """Runs ``perceive_task`` on a Ray cluster (started locally when none is running or named)."""

    def __init__(self, make_vlm: Any, folder: BuildFolder, config: BuildConfig, *, endpoint: str, limit: int,
                 address: str | None, task_cpus: float, max_retries: int,
                 embedder: WorkerEmbedder | None = None) -> None:
        ray = self.ray = import_ray()
        self._owns = not ray.is_initialized()
        if self._owns:
            start_ray(ray, address)
        self.make_vlm, self.folder, self.config, self.embedder = make_vlm, folder, config, embedder
        self.slots = endpoint_slots(endpoint, limit)
        self.task = ray.remote(perceive_task).options(num_cpus=task_cpus, max_retries=max_retries,
                                                      retry_exceptions=False)
        self.task_cpus = task_cpus
        self._refs: set[Any] = set()

    def slots_free(self) -> int:
        """Videos the cluster can run at once."""
        cpus = self.ray.cluster_resources().get("CPU", 1.0)
        return max(1, int(cpus / self.task_cpus)) if self.task_cpus > 0 else 64

    async def perceive(self, source: str, video_id: str) -> VideoBundle:
        ref = self.task.remote(self.folder, self.make_vlm, source, video_id, self.config, self.slots, self.embedder)
        self._refs.add(ref)
        try:
            return await asyncio.wrap_future(ref.future())
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                self.ray.cancel(ref, force=True)
            cause = _cause(exc)
            if cause is exc:
                raise
            raise cause from exc
        finally:
            self._refs.discard(ref)

    async def stats(self) -> SlotStats:
        return await asyncio.wrap_future(self.slots.stats.remote().future())

    def close(self) -> None:
        if self._owns:
            self.ray.shutdown()


def _cause(exc: BaseException) -> BaseException:
    """The build's own exception inside Ray's wrapper, when there is one."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else exc
