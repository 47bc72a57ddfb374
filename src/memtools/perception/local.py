"""A local transformers vision-language model (Qwen2.5-VL, SmolVLM, Gemma 3, LLaVA, …) for
people with a GPU.

The model is loaded on first use (``AutoProcessor`` + ``AutoModelForImageTextToText``), on
the best device there is unless told otherwise. Generation runs in a worker thread so the
event loop stays free, one request at a time per model. The prompt is built with the
processor's own chat template: a text part with each frame's time, an image part, …, the
prompt. JSON schemas are not enforced here; the prompt has to ask for JSON.

Needs ``torch`` and ``transformers``, and for almost every real processor ``Pillow``
(and ``torchvision`` for the fast image processors).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from memtools.errors import ConfigError, PerceptionError
from memtools.perception.base import (
    BaseVLM,
    PerceptionRequest,
    PerceptionResponse,
    Usage,
    check_model_requests_allowed,
    frame_label,
)

_INSTALL_HINT = "pip install 'memtools[local]' (CPU build: add --extra-index-url https://download.pytorch.org/whl/cpu)"


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # a base install: torch comes with memtools[local]
        raise ConfigError(f"the local VLM needs PyTorch: {_INSTALL_HINT}") from exc
    return torch


def select_device(preference: str = "auto") -> str:
    """``cuda`` if there is a GPU, else ``mps`` on Apple silicon, else ``cpu``; or ``preference``."""
    if preference != "auto":
        return preference
    torch = _import_torch()
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _auto_dtype(device: str) -> Any:
    torch = _import_torch()
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device == "mps":
        return torch.float16
    return torch.float32


class LocalVLM(BaseVLM):
    """``LocalVLM("Qwen/Qwen2.5-VL-3B-Instruct")`` loads by name or path on first use;
    ``LocalVLM(model=..., processor=...)`` uses objects you built (kept where they are)."""

    def __init__(
        self,
        model_id: str | None = None,
        *,
        model: Any = None,
        processor: Any = None,
        device: str = "auto",
        dtype: Any = "auto",
        trust_remote_code: bool = False,
        generate_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if (model is None) != (processor is None):
            raise ConfigError("give both model= and processor=, or neither and a model_id")
        if model is None and not model_id:
            raise ConfigError("LocalVLM needs a model id or path (e.g. 'Qwen/Qwen2.5-VL-3B-Instruct') "
                              "or model=/processor=")
        self.model_id = model_id
        config_name = getattr(getattr(model, "config", None), "_name_or_path", "")
        self.model_name = model_id or str(config_name or type(model).__name__)
        self.device_preference = device
        self.dtype = dtype
        self.trust_remote_code = trust_remote_code
        self.generate_kwargs = dict(generate_kwargs or {})
        self._model = model
        self._processor = processor
        self._lock = threading.Lock()  # one generation at a time, and one load

    def __repr__(self) -> str:
        return f"LocalVLM({self.model_name!r})"

    def load(self) -> tuple[Any, Any]:
        """(model, processor), loading them the first time."""
        with self._lock:
            return self._load_locked()

    def _load_locked(self) -> tuple[Any, Any]:
        if self._model is not None:
            return self._model, self._processor
        check_model_requests_allowed(f"loading local model {self.model_id}")
        try:
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:  # a base install: transformers comes with memtools[local]
            raise ConfigError(f"the local VLM needs transformers: {_INSTALL_HINT}") from exc
        if self.model_id is None:  # pragma: no cover - the constructor requires a model id without model=
            raise ConfigError("LocalVLM needs a model id or path to load")
        device = select_device(self.device_preference)
        dtype = _auto_dtype(device) if self.dtype == "auto" else self.dtype
        try:
            processor = AutoProcessor.from_pretrained(self.model_id, trust_remote_code=self.trust_remote_code)
            model = AutoModelForImageTextToText.from_pretrained(
                self.model_id, dtype=dtype, trust_remote_code=self.trust_remote_code
            )
        except (OSError, ValueError, ImportError) as exc:
            raise PerceptionError(f"cannot load local model {self.model_id!r}: {exc}") from exc
        # transformers types ``to`` through a decorator whose signature mypy reads as unbound
        self._model, self._processor = model.to(device).eval(), processor  # type: ignore[arg-type]
        return self._model, self._processor

    def build_messages(self, request: PerceptionRequest) -> list[dict[str, Any]]:
        """Chat-template messages; images are ``{"type": "image"}`` placeholders, filled in order."""
        content: list[dict[str, Any]] = []
        for t, _ in request.frames:
            content.append({"type": "text", "text": frame_label(t)})
            content.append({"type": "image"})
        content.append({"type": "text", "text": request.prompt})
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": [{"type": "text", "text": request.system}]})
        messages.append({"role": "user", "content": content})
        return messages

    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse:
        return await asyncio.to_thread(self._generate, request)

    def _generate(self, request: PerceptionRequest) -> PerceptionResponse:
        import cv2

        from memtools.video import decode_jpeg

        torch = _import_torch()
        images = [cv2.cvtColor(decode_jpeg(data), cv2.COLOR_BGR2RGB) for _, data in request.frames]
        with self._lock:
            model, processor = self._load_locked()
            try:
                prompt = processor.apply_chat_template(
                    self.build_messages(request), add_generation_prompt=True, tokenize=False
                )
                inputs = processor(text=prompt, images=images or None, return_tensors="pt").to(model.device)
                sampling: dict[str, Any] = {"do_sample": False}
                if request.temperature:
                    sampling = {"do_sample": True, "temperature": request.temperature}
                with torch.inference_mode():
                    output = model.generate(
                        **inputs, max_new_tokens=request.max_tokens, **sampling, **self.generate_kwargs
                    )
            except (RuntimeError, ValueError, TypeError) as exc:
                raise PerceptionError(f"local model {self.model_name} failed: {type(exc).__name__}: {exc}") from exc
        prompt_tokens = int(inputs["input_ids"].shape[1])
        new_tokens = output[0, prompt_tokens:]
        text = processor.batch_decode(new_tokens[None, :], skip_special_tokens=True)[0]
        return PerceptionResponse(
            text=text.strip(),
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=int(new_tokens.shape[0])),
            model=self.model_name,
            finish_reason=_finish_reason(model, new_tokens.tolist(), request.max_tokens),
        )


def _finish_reason(model: Any, tokens: list[int], max_tokens: int) -> str:
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    eos_ids = set(eos) if isinstance(eos, (list, tuple)) else {eos}
    if len(tokens) >= max_tokens and not (tokens and tokens[-1] in eos_ids):
        return "length"
    return "stop"
