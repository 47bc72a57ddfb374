"""A model's small JSON files (``config.json``, sentence-transformers' ``modules.json`` and pooling
config), read from its folder or the hub cache without loading the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# sentence-transformers pooling names: ``pooling_mode`` values and old ``pooling_mode_*`` keys.
_ST_POOLING = {"mean": "mean", "mean_tokens": "mean", "cls": "cls", "cls_token": "cls", "lasttoken": "last_token"}


def read_model_file(source: str, filename: str) -> Any:
    """A JSON file of the model folder or hub repo (from the hub cache when offline), else None."""
    try:
        if Path(source).is_dir():
            path = Path(source) / filename
        else:
            from huggingface_hub import hf_hub_download
            from huggingface_hub.errors import EntryNotFoundError

            try:
                path = Path(hf_hub_download(source, filename))
            except EntryNotFoundError:
                return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, offline, invalid repo id, not JSON
        return None


def pooling_from_st_config(source: str) -> str | None:
    """Pooling named by a sentence-transformers ``modules.json`` / ``*_Pooling/config.json``."""
    modules = read_model_file(source, "modules.json")
    folders = ["1_Pooling"] if not isinstance(modules, list) else [
        m.get("path") for m in modules if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling")]
    if not folders:
        return None
    config = read_model_file(source, f"{folders[0]}/config.json")
    if not isinstance(config, dict):
        return None
    mode = config.get("pooling_mode")
    modes = [mode] if isinstance(mode, str) else mode if isinstance(mode, list) else None
    if modes is None:  # the old format: one boolean key per mode
        modes = [k.removeprefix("pooling_mode_") for k, on in config.items() if k.startswith("pooling_mode_") and on]
    return "+".join(_ST_POOLING.get(m, m) for m in modes) or None


def pooling_from_architecture(config: Any) -> str:
    """Last-token pooling for decoder-only (causal) models, mean pooling for encoders."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if getattr(config, "is_encoder_decoder", False) or getattr(config, "is_causal", True) is False:
        return "mean"
    if any(arch.endswith("ForCausalLM") for arch in getattr(config, "architectures", None) or []):
        return "last_token"
    model_type = getattr(config, "model_type", "")
    causal_only = (model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
                   and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES)
    return "last_token" if causal_only else "mean"
