"""Memories with coloured keyframes, for the visual-search tests.

``coloured_graph`` is the kitchen graph plus one keyframe per macro event, each a flat
colour (red, green, blue by default) written as a real JPEG into the memory folder, so an
image embedder sees real image files.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from memtools.ontology import keyframe_id
from memtools.schema import Edge, EdgeCategory, Keyframe, VideoGraph
from memtools.testing import kitchen_graph

BGR = {"red": (0, 0, 255), "green": (0, 255, 0), "blue": (255, 0, 0), "yellow": (0, 255, 255), "orange": (0, 128, 255)}


def colour_jpeg(colour: str, size: int = 64, square: bool = False) -> bytes:
    """A JPEG of one colour; ``square``: a coloured square on a grey background."""
    image = np.full((size, size, 3), 128 if square else BGR[colour], dtype=np.uint8)
    if square:
        image[size // 4: 3 * size // 4, size // 4: 3 * size // 4] = BGR[colour]
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return data.tobytes()


def coloured_graph(memory_path: Path, video_id: str = "kitchen",
                   colours: tuple[str, ...] = ("red", "green", "blue")) -> VideoGraph:
    """The kitchen graph with keyframe i (at the middle of macro i) coloured ``colours[i]``."""
    graph = kitchen_graph(video_id)
    folder = Path(memory_path) / "frames" / video_id
    folder.mkdir(parents=True, exist_ok=True)
    for n, (macro, colour) in enumerate(zip(graph.macros, colours, strict=False), 1):
        t = (macro.t_start + macro.t_end) / 2
        relative = f"frames/{video_id}/{t:010.3f}.jpg"
        (Path(memory_path) / relative).write_bytes(colour_jpeg(colour, square=True))
        kid = keyframe_id(video_id, n)
        graph.keyframes.append(Keyframe(id=kid, video_id=video_id, t=t, path=relative, macro_id=macro.id))
        graph.edges.append(Edge(source=kid, target=macro.id, category=EdgeCategory.GROUNDING, label="DEPICTS"))
    graph.check()
    return graph


# --- a tiny CLIP, built and trained offline -------------------------------------------------

CLIP_WORDS = ["<pad>", "<unk>", "<s>", "</s>", "a", "red", "blue", "green", "yellow", "square", "frame", "van"]
TRAIN_COLOURS = ("red", "blue", "green")


def tiny_clip_folder(folder: Path, train_steps: int = 0, seed: int = 0) -> Path:
    """A randomly initialised CLIP (2 layers, width 32, 32x32 images) saved with its word-level tokenizer
    and image processor; ``train_steps`` steps of CLIP's contrastive loss on red/blue/green squares
    paired with their colour names teach it which name goes with which picture."""
    import io

    import torch
    from PIL import Image
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, PreTrainedTokenizerFast

    words = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(CLIP_WORDS)}, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 3)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="<pad>", unk_token="<unk>",
                                        eos_token="</s>", bos_token="<s>", model_max_length=16)
    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config=dict(vocab_size=len(CLIP_WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=16, eos_token_id=3, pad_token_id=0,
                         bos_token_id=2),
        vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2),
        projection_dim=16)
    model = CLIPModel(config)
    processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    if train_steps:
        pictures = [Image.open(io.BytesIO(colour_jpeg(c, square=True))).convert("RGB") for c in TRAIN_COLOURS]
        pixels = processor(images=pictures, return_tensors="pt")["pixel_values"]
        texts = tokenizer(list(TRAIN_COLOURS), return_tensors="pt", padding=True)
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        for _ in range(train_steps):
            loss = model(**texts, pixel_values=pixels, return_loss=True).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    processor.save_pretrained(folder)
    return Path(folder)
