"""LocalVLM with a tiny, randomly initialised LLaVA built from a config: nothing is downloaded.

The tokenizer is a byte-level BPE with no merges, built here. transformers' own image
processors need Pillow (or torchvision), which this environment lacks, so the processor
is ``TinyLlavaProcessor``: the three methods LocalVLM calls on any HF processor, doing what
``LlavaProcessor`` does (chat template, one ``<image>`` token per patch, pixel values).
With Pillow installed, ``test_real_llava_processor`` runs the real one too.
"""

from __future__ import annotations

import asyncio

import cv2
import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402
from transformers import (  # noqa: E402
    BatchFeature,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    PreTrainedTokenizerFast,
)

from memtools.errors import ConfigError, PerceptionError  # noqa: E402
from memtools.perception import PerceptionRequest, block_model_requests  # noqa: E402
from memtools.perception.local import LocalVLM, select_device  # noqa: E402
from memtools.video import encode_jpeg  # noqa: E402
from synthetic_video import scene  # noqa: E402

SPECIAL = ["<pad>", "<unk>", "<s>", "</s>", "<image>"]
SIDE, PATCH = 32, 8
IMAGE_TOKENS = (SIDE // PATCH) ** 2  # CLS dropped ("default" feature selection)
TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}:"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>{% else %} {{ c['text'] }}{% endif %}{% endfor %}"
    "</s>\n{% endfor %}{% if add_generation_prompt %}<s>assistant:{% endif %}"
)


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate(SPECIAL + sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    tokenizer.chat_template = TEMPLATE
    return tokenizer


class TinyLlavaProcessor:
    """What LocalVLM needs from an HF processor, done the way LlavaProcessor does it."""

    def __init__(self, tokenizer: PreTrainedTokenizerFast) -> None:
        self.tokenizer = tokenizer
        self.calls: list[tuple[str, int]] = []

    def apply_chat_template(self, messages, *, add_generation_prompt: bool, tokenize: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt,
                                                  tokenize=tokenize)

    def __call__(self, *, text: str, images=None, return_tensors: str = "pt") -> BatchFeature:
        images = images or []
        assert text.count("<image>") == len(images), "one image per placeholder"
        self.calls.append((text, len(images)))
        encoded = self.tokenizer(text.replace("<image>", "<image>" * IMAGE_TOKENS), return_tensors=return_tensors)
        data = dict(encoded)
        if images:
            pixels = [cv2.resize(im, (SIDE, SIDE)).astype(np.float32).transpose(2, 0, 1) / 255.0 for im in images]
            data["pixel_values"] = np.stack(pixels)
        return BatchFeature(data, tensor_type=return_tensors)

    def batch_decode(self, ids, *, skip_special_tokens: bool) -> list[str]:
        return self.tokenizer.batch_decode(ids, skip_special_tokens=skip_special_tokens)


@pytest.fixture(scope="module")
def tiny_model():
    tokenizer = tiny_tokenizer()
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=SIDE,
            patch_size=PATCH
        ),
        text_config=LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=512,
            bos_token_id=2,
            eos_token_id=3,
            pad_token_id=0,
        ),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    torch.manual_seed(0)
    return LlavaForConditionalGeneration(config).eval(), tokenizer


def jpeg(k: int) -> bytes:
    return encode_jpeg(scene(k))


REQUEST = PerceptionRequest(prompt="What happens?", frames=[(1.0, jpeg(0)), (62.0, jpeg(1))], system="Be brief.",
                            max_tokens=6)


async def test_generates_from_labelled_frames(tiny_model):
    model, tokenizer = tiny_model
    processor = TinyLlavaProcessor(tokenizer)
    seen_images: list[int] = []
    hook = model.model.vision_tower.register_forward_hook(lambda mod, args, out: seen_images.append(args[0].shape[0]))
    try:
        vlm = LocalVLM(model=model, processor=processor)
        response = await vlm.complete(REQUEST)
    finally:
        hook.remove()

    prompt, n_images = processor.calls[0]
    assert prompt == (
        "<s>system: Be brief.</s>\n"
        "<s>user: frame at 0:00:01 (1.0 s)<image> frame at 0:01:02 (62.0 s)<image> What happens?</s>\n"
        "<s>assistant:"
    )
    assert n_images == 2 and seen_images == [2]  # both frames reached the vision tower
    assert isinstance(response.text, str)
    prompt_ids = tokenizer(prompt.replace("<image>", "<image>" * IMAGE_TOKENS))["input_ids"]
    assert response.usage.prompt_tokens == len(prompt_ids)
    assert 1 <= response.usage.completion_tokens <= 6
    # a random tiny model: it either hits the token limit without an end token, or stops on one
    assert response.finish_reason == ("length" if response.usage.completion_tokens == REQUEST.max_tokens
                                       and not response.text.endswith(tokenizer.eos_token or "\0") else "stop")
    assert vlm.usage.calls == 1 and vlm.model_name


async def test_greedy_and_serialised(tiny_model):
    model, tokenizer = tiny_model
    vlm = LocalVLM(model=model, processor=TinyLlavaProcessor(tokenizer))
    first, second = await asyncio.gather(vlm.complete(REQUEST), vlm.complete(REQUEST))
    assert first.text == second.text and first.usage == second.usage
    no_frames = await vlm.complete(PerceptionRequest(prompt="Say hi.", max_tokens=3))
    assert no_frames.usage.completion_tokens <= 3


async def test_real_llava_processor(tiny_model):
    pytest.importorskip("PIL", reason="transformers image processors need Pillow")
    from transformers import CLIPImageProcessor, LlavaProcessor

    model, tokenizer = tiny_model
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": SIDE}, crop_size={"height": SIDE, "width": SIDE}),
        tokenizer=tokenizer,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=TEMPLATE,
    )
    response = await LocalVLM(model=model, processor=processor).complete(REQUEST)
    assert response.usage.prompt_tokens > 2 * IMAGE_TOKENS and response.usage.completion_tokens >= 1


def test_device_selection():
    assert select_device("cpu") == "cpu"
    assert select_device("cuda:1") == "cuda:1"
    expected = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert select_device("auto") == expected


async def test_loading_by_name_is_lazy_and_guarded():
    vlm = LocalVLM("org/some-vlm")  # constructing loads nothing
    with block_model_requests(), pytest.raises(PerceptionError, match="blocked"):
        await vlm.complete(REQUEST)


def test_construction_errors(tiny_model):
    model, _ = tiny_model
    with pytest.raises(ConfigError):
        LocalVLM()
    with pytest.raises(ConfigError):
        LocalVLM(model=model)  # a model without its processor
