"""The construction pipeline: a video in, a hierarchical graph memory out (MEMDREAMER §3.1).

    from memtools.builder import BuildConfig, build_video
    from memtools.perception import vlm_from_spec
    from memtools.store import Memory

    memory = Memory.create("my-memory", embedder)
    report = build_video(memory, vlm_from_spec("openai:gpt-4o-mini"), "talk.mp4",
                         config=BuildConfig.short())

Stages: probe -> keyframes -> streaming segmentation -> downward extraction -> upward
aggregation -> index (``memory.write_video``). Every model answer and stage output is
checkpointed in ``memory.work_dir(video_id)``; running the same build again after a crash
resumes without repeating finished model calls. Model output is repaired, validated and,
where it cannot be fixed, dropped and recorded in the build report.
"""

from memtools.builder.config import PRESETS, BuildConfig
from memtools.builder.pipeline import abuild_video, abuild_videos, build_video, build_videos, resolve_video_id
from memtools.builder.progress import NullProgress, Progress, ProgressSink, Snapshot, TextProgress
from memtools.builder.prompts import Prompt, aggregation_prompt, extraction_prompt, root_prompt, segmentation_prompt
from memtools.builder.repair import AnswerError, canonical_label, extract_json, parse_answer
from memtools.builder.report import BuildSummary, Issue, Usage, VideoReport

__all__ = [
    "PRESETS",
    "AnswerError",
    "BuildConfig",
    "BuildSummary",
    "Issue",
    "NullProgress",
    "Progress",
    "ProgressSink",
    "Prompt",
    "Snapshot",
    "TextProgress",
    "Usage",
    "VideoReport",
    "abuild_video",
    "abuild_videos",
    "aggregation_prompt",
    "build_video",
    "build_videos",
    "canonical_label",
    "extract_json",
    "extraction_prompt",
    "parse_answer",
    "resolve_video_id",
    "root_prompt",
    "segmentation_prompt",
]
