"""Visual memory: keyframe embedding throughput and ``search_frames`` latency at 1,000 h.

1. Throughput (frames/s) of ``TransformersImageEmbedder`` on 320x180 JPEG keyframes, with a
   tiny random CLIP (the tests' size) and a random CLIP with ViT-B/32's image tower (224 px,
   12 layers, width 768, projection 512): the weights are random, the arithmetic is real.
2. ``search_frames`` p50/p99 over a memory holding ~100k keyframe rows (1,000 h at one
   keyframe every 36 s) in 20 videos: a text query (the B/32-sized text tower runs at query
   time), "more like this frame" (no model), and a text query filtered to one video and a
   2-hour window. The 100k rows are synthetic 512-d vectors (1,000 clusters + noise) added to
   the lance table directly; the 20 videos themselves are written by ``Memory.write_video``.

Usage: python benchmarks/visual.py [--keyframes 100000] [--calls 100] [--workdir /tmp]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import load_average, markdown_table, offline, p50_p99  # noqa: E402

WORDS = ["<pad>", "<unk>", "<s>", "</s>", "a", "red", "blue", "green", "van", "street", "person", "door"]
VIDEOS = 20


def clip_folder(folder: Path, *, b32: bool) -> Path:
    """A random CLIP saved with a word-level tokenizer and CLIP's image processor."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, PreTrainedTokenizerFast

    if (folder / "config.json").is_file():
        return folder
    words = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    words.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 3)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="<pad>", unk_token="<unk>",
                                        eos_token="</s>", bos_token="<s>", model_max_length=77)
    torch.manual_seed(0)
    text = dict(vocab_size=len(WORDS), eos_token_id=3, pad_token_id=0, bos_token_id=2)
    if b32:  # ViT-B/32 image tower and CLIP-B's text tower (width 512, 12 layers)
        config = CLIPConfig(text_config=text, vision_config=dict(image_size=224, patch_size=32), projection_dim=512)
        size = 224
    else:
        config = CLIPConfig(text_config=dict(text, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=2, max_position_embeddings=16),
                            vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64,
                                               num_hidden_layers=2, num_attention_heads=2), projection_dim=16)
        size = 32
    CLIPModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size}).save_pretrained(folder)
    return folder


def keyframe_jpegs(n: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        image = cv2.GaussianBlur(rng.integers(0, 255, (180, 320, 3), dtype=np.uint8), (9, 9), 0)
        out.append(cv2.imencode(".jpg", image)[1].tobytes())
    return out


def throughput(folder: Path, images: list[bytes], batch_size: int = 32) -> tuple[float, float]:
    from memtools.embed.clip import TransformersImageEmbedder

    embedder = TransformersImageEmbedder(folder, device="cpu", batch_size=batch_size)
    embedder.embed_images(images[:4])  # load + warm up
    start = time.perf_counter()
    embedder.embed_images(images)
    frames_s = len(images) / (time.perf_counter() - start)
    queries = [time.perf_counter()]
    for word in WORDS[4:] * 3:
        embedder.embed_query(f"a {word}")
        queries.append(time.perf_counter())
    return frames_s, float(np.median(np.diff(queries))) * 1000


def build_memory(path: Path, model: Path, keyframes: int) -> list[str]:
    """20 kitchen videos written normally, then ``keyframes`` synthetic rows spread over 1,000 h."""
    from memtools.embed import TestEmbedder
    from memtools.embed.clip import TransformersImageEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph

    ids = [f"cam{i:02d}" for i in range(VIDEOS)]
    if (path / "memtools.json").is_file():
        return ids
    image = keyframe_jpegs(1)[0]
    with Memory.create(path, TestEmbedder(64), image_embedder=TransformersImageEmbedder(model)) as memory:
        graphs = []
        for vid in ids:
            graph = kitchen_graph(vid)
            (path / "frames" / vid).mkdir(parents=True)
            (path / "frames" / vid / "kf.jpg").write_bytes(image)
            graphs.append(graph)
        memory.write_videos(graphs)
        rng = np.random.default_rng(1)
        centroids = rng.normal(size=(1000, 512)).astype(np.float32)
        hours = 1000 * 3600 / VIDEOS
        table = memory.keyframes or _table(memory)
        for start in range(0, keyframes, 20_000):
            n = min(20_000, keyframes - start)
            vectors = centroids[rng.integers(0, 1000, n)] + 0.6 * rng.normal(size=(n, 512)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rows = [{"id": f"{ids[(start + i) % VIDEOS]}/kf_{start + i:07d}", "video_id": ids[(start + i) % VIDEOS],
                     "t": float(rng.uniform(0, hours)), "path": f"frames/{ids[(start + i) % VIDEOS]}/kf.jpg",
                     "macro_id": "", "vector": vectors[i]} for i in range(n)]
            table.replace_videos([], rows)
        table.finish_write()
    return ids


def _table(memory):
    from memtools.store.tables.keyframe_index import KeyframeIndex

    return KeyframeIndex(memory.vectors_unchecked, memory.manifest.image_embedder.dim)


def latency(path: Path, ids: list[str], calls: int) -> list[list[object]]:
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    with Memory.open(path) as memory:
        tools = MemoryTools(memory)
        rows_total = memory.keyframes.count()
        some = [r.id for r in memory.keyframes.search(np.ones(512, np.float32), 50)]
        cases = {
            "text query, all videos": lambda i: tools.search_frames(query=f"a {WORDS[4 + i % 8]}"),
            "more like this frame": lambda i: tools.search_frames(frame_id=some[i % len(some)]),
            "text query, 1 video + 2 h window": lambda i: tools.search_frames(
                query=f"a {WORDS[4 + i % 8]}", video_id=ids[i % VIDEOS], start_sec=3600.0 * (i % 40),
                end_sec=3600.0 * (i % 40) + 7200),
        }
        out = []
        for name, call in cases.items():
            for i in range(5):
                call(i)  # warm: model loaded, lance files cached
            times = []
            for i in range(calls):
                start = time.perf_counter()
                result = call(i)
                times.append(time.perf_counter() - start)
            p50, p99 = p50_p99(times)
            out.append([name, f"{rows_total:,}", f"{p50:.1f}", f"{p99:.1f}", len(result.frames)])
    return out


def main() -> None:
    offline()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keyframes", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--frames", type=int, default=64, help="keyframes embedded per throughput run")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"))
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (the target machine has 2 cores)")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    work = args.workdir / "memtools-visual-bench"
    if args.rebuild:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {load_average()}\n")
    tiny, b32 = clip_folder(work / "tiny-clip", b32=False), clip_folder(work / "clip-b32-random", b32=True)
    images = keyframe_jpegs(args.frames)
    rows = []
    for name, folder in (("tiny CLIP (tests)", tiny), ("CLIP ViT-B/32-sized, random", b32)):
        frames_s, query_ms = throughput(folder, images)
        rows.append([name, len(images), f"{frames_s:.1f}", f"{query_ms:.1f}"])
    print(f"## Keyframe embedding throughput (CPU, {args.threads} torch thread(s), batch 32, 320x180 JPEGs)\n")
    print(markdown_table(["model", "frames", "frames/s", "text query ms (p50)"], rows))
    memory = work / f"memory-{args.keyframes}"
    start = time.perf_counter()
    ids = build_memory(memory, b32, args.keyframes)
    built = time.perf_counter() - start
    print(f"\n## search_frames at {args.keyframes:,} keyframes ({VIDEOS} videos; memory ready in {built:.0f} s)\n")
    print(markdown_table(["call", "keyframe rows", "p50 ms", "p99 ms", "hits"], latency(memory, ids, args.calls)))
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
