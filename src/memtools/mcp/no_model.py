"""A server allowed to add videos but given no usable model still starts: add_video says what to set.

``memtools serve --allow-root DIR`` without ``--vlm`` (a Claude Desktop extension whose optional model
setting was left empty), with a model spec that names no backend, or with ``--max-cost`` for a model
that has no price, used to exit at start ("no perception model"), taking every read tool down with it.
``runner_without_model`` stands in for the job runner then: the build tools stay listed, ``list_jobs``,
``get_job`` and ``estimate_build`` answer, and ``add_video`` answers a tool error naming the setting to
fill in. Nothing is built, so the jobs a stopped server left unfinished stay queued for a server that
has a model (none is failed for want of one).
"""

from __future__ import annotations

import logging
from typing import Any

from memtools.errors import ConfigError
from memtools.jobs import JobLimits, JobRunner, SourcePolicy

log = logging.getLogger(__name__)

WHAT_TO_SET = ("In the Claude Desktop extension: Settings > Extensions > memtools > set 'Vision model for adding "
               "videos' (e.g. openai:gpt-4o-mini) and 'Model API key', then turn the extension off and on. From a "
               "shell: start the server again with --vlm openai:MODEL (add --base-url for vLLM, Ollama or LM Studio) "
               "or --replay FILE, or set MEMTOOLS_VLM.")


class _NoModel:
    """The runner's model: never called (``submit`` refuses first); named for ``estimate_build``'s prices."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name

    async def complete(self, request: Any) -> Any:  # pragma: no cover - submit refuses before a build starts
        raise ConfigError("no perception model")


class ModelMissingRunner(JobRunner):
    """A ``JobRunner`` that builds nothing: ``submit`` raises the reason, ``start`` resumes no job."""

    def __init__(self, memory: Any, settings: Any, policy: SourcePolicy, limits: JobLimits, reason: str) -> None:
        from memtools.builder.estimate import model_name

        super().__init__(memory, settings, policy, limits=limits, vlm=_NoModel(model_name(settings)))
        self.reason = reason

    def start(self) -> list:
        return []  # unfinished jobs stay queued: a server started with a model resumes them

    def submit(self, source: str, video_id: str | None = None) -> Any:
        raise ConfigError(self.reason)


def runner_without_model(memory: Any, options: dict[str, Any], problem: ConfigError) -> ModelMissingRunner:
    """The stand-in runner of ``job_options``' ``options``, when ``make_runner`` refused them with ``problem``."""
    from memtools.builder.settings import BuildSettings, resolve_settings
    from memtools.costs import PriceTable

    try:
        settings = resolve_settings(options["flags"])
    except ConfigError:  # a bad config file or preset: estimates use the default preset
        settings = BuildSettings()
    try:
        prices = PriceTable.load(memory.path, options["prices"])
    except ConfigError:
        prices = PriceTable({}, maintained=True)
    policy = SourcePolicy(roots=tuple(options["roots"]), allow_urls=options["allow_urls"],
                          url_hosts=options["url_hosts"])
    limits = JobLimits(max_queued=options["max_queued"], prices=prices)  # no budget: nothing is spent
    reason = f"add_video cannot build videos on this server: {problem}. {WHAT_TO_SET}"
    log.warning("%s The other tools are served.", reason)
    return ModelMissingRunner(memory, settings, policy, limits, reason)
