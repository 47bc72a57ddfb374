"""Build settings from a config file, environment variables and command-line flags.

Precedence, highest first: command-line flags, ``MEMTOOLS_*`` environment variables, the
config file (``--config`` or ``MEMTOOLS_CONFIG``), the preset. A config file is TOML (or
JSON for ``.json``); its ``[build]`` table (or its top level) holds backend options and any
``BuildConfig`` field::

    [build]
    vlm = "openai:qwen2.5-vl-7b-instruct"
    base_url = "http://localhost:8000/v1"
    api_key_env = "VLLM_API_KEY"
    preset = "short"
    concurrency = 8
    frames_per_macro = 12

    [build.keyframes]
    sample_every_sec = 1.0
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from memtools.builder.config import BuildConfig
from memtools.config_file import load_config_file
from memtools.errors import ConfigError

ENV_PREFIX = "MEMTOOLS_"
BACKEND_KEYS = ("vlm", "base_url", "api_key_env", "replay", "record", "embedder", "preset")
ENV_KEYS = BACKEND_KEYS + ("concurrency", "window_sec", "config")


class BuildSettings(BaseModel):
    """Everything ``memtools build`` needs besides the videos and the memory folder."""

    vlm: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    replay: str | None = None
    record: str | None = None
    embedder: str | None = None
    config: BuildConfig = BuildConfig()


def env_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for key in ENV_KEYS:
        value = environ.get(ENV_PREFIX + key.upper())
        if value not in (None, ""):
            out[key] = value
    return out


def resolve_settings(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> BuildSettings:
    """Merge flags (None = not given), environment and config file into ``BuildSettings``."""
    env = env_settings(environ)
    config_path = flags.get("config") or env.get("config")
    merged: dict[str, Any] = load_config_file(config_path) if config_path else {}
    merged.update({k: v for k, v in env.items() if k != "config"})
    merged.update({k: v for k, v in flags.items() if v is not None and k != "config"})

    preset = merged.pop("preset", None) or "default"
    base = BuildConfig.preset(str(preset))
    backend = {k: merged.pop(k) for k in BACKEND_KEYS if k in merged}
    unknown = sorted(set(merged) - set(BuildConfig.model_fields))
    if unknown:
        raise ConfigError(f"unknown build setting(s) {', '.join(unknown)}; valid: "
                          f"{', '.join(sorted((*BACKEND_KEYS, *BuildConfig.model_fields)))}")
    if isinstance(merged.get("keyframes"), dict):
        merged["keyframes"] = base.keyframes.model_copy(update=merged["keyframes"]).model_dump()
    try:
        config = BuildConfig.model_validate({**base.model_dump(), **merged})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid build settings: {problems}") from exc
    backend = {k: (str(v) if v is not None else None) for k, v in backend.items()}
    return BuildSettings(config=config, **{k: v for k, v in backend.items() if v is not None})


def vlm_from_settings(settings: BuildSettings):
    """The perception backend the settings name (``--replay``, ``--vlm``, wrapped by ``--record``)."""
    from memtools.perception import VLM, RecordingVLM, ReplayVLM, vlm_from_spec

    if settings.replay and settings.vlm:
        raise ConfigError("give either a model (--vlm / MEMTOOLS_VLM) or --replay, not both")
    vlm: VLM
    if settings.replay:
        vlm = ReplayVLM(settings.replay)
    elif settings.vlm:
        if settings.vlm.startswith("python:"):
            vlm = _python_vlm(settings.vlm)
        else:
            vlm = vlm_from_spec(settings.vlm, base_url=settings.base_url, api_key_env=settings.api_key_env,
                                concurrency=settings.config.concurrency)
    else:
        raise ConfigError("no perception model: pass --vlm openai:MODEL (add --base-url for vLLM, Ollama or LM "
                          "Studio), --vlm local:MODEL, or --replay FILE with recorded answers; or set MEMTOOLS_VLM")
    if settings.record:
        vlm = RecordingVLM(vlm, settings.record)
    return vlm


def _python_vlm(spec: str):
    """``python:package.module:name``: a VLM object, or a function/class that makes one without arguments."""
    target = spec.removeprefix("python:")
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"{spec!r} must look like python:package.module:name")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load the perception backend {spec!r}: {exc}") from exc
    if not hasattr(obj, "complete") and callable(obj):
        obj = obj()
    if not hasattr(obj, "complete"):
        raise ConfigError(f"{spec!r} is not a VLM (an object with async complete(request))")
    return obj
