"""What a build will cost, before it calls a model: calls, tokens, images, money and wall time.

    from memtools.builder.estimate import estimate_build
    plan = estimate_build([probe("talk.mp4")], BuildConfig.short(), model="gpt-4o-mini", prices=prices)
    print(plan.render())

The estimate walks the same plan the pipeline runs (``plan_window`` for the segmentation
windows, ``uniform_times`` for the frames of each call, ``aggregate.chunks`` for the aggregation
calls) and sizes every prompt with the prompt functions the build sends. What it cannot know
is what the model will answer: how long its episodes are (assumed ``episode_sec``, by default a
fifth of a window within the preset's episode bounds) and how long its answers are (typical
answer sizes below, between a scripted model's and a hand-written recording's). Checkpointed
steps of an interrupted build are not subtracted: the estimate is for a build from scratch.
Where a video's extraction prompts offer the library's names (``memtools.builder.vocabulary``: the
videos after the first of a run, and every video when the memory already has a library), they are
sized at the offer's bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from memtools.builder import aggregate as agg
from memtools.builder.config import BuildConfig
from memtools.builder.prompts import MacroBrief, aggregation_prompt, extraction_prompt, segmentation_prompt
from memtools.builder.segment import plan_window
from memtools.builder.vocabulary import LibraryNames, largest_offer
from memtools.costs import CHARS_PER_TOKEN, IMAGE_TOKENS, PriceTable, Tally
from memtools.video import VideoInfo, uniform_times

ANSWER_TOKENS = {"segment_episode": 40, "extract": 400, "aggregate_macro": 45, "aggregate_base": 120}
"""Typical answer sizes (tokens): per episode of a segmentation answer, per extraction answer, per
macro event of an aggregation answer plus its fixed part (super events, root)."""
SECONDS_PER_CALL = 8.0
"""Typical wall time of one vision-model call (a hosted model answering a few hundred tokens)."""
_BRIEF_SUMMARY = ("A person does something in a place while another thing happens nearby; the clip shows what "
                  "changes and why, in about thirty words of summary.")


@dataclass
class StageEstimate:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    images: int = 0

    def add(self, tokens_in: int, tokens_out: int, images: int) -> None:
        self.calls += 1
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out
        self.images += images


@dataclass
class BuildEstimate:
    """The expected model work of building some videos, per stage, with money and wall time."""

    videos: list[tuple[str, float]] = field(default_factory=list)  # (name, seconds)
    stages: dict[str, StageEstimate] = field(default_factory=dict)
    model: str = ""
    cost: float | None = None
    price_source: str = ""  # where the price came from: the user's file, or genai-prices and its version
    seconds: float = 0.0

    @property
    def total(self) -> StageEstimate:
        out = StageEstimate()
        for s in self.stages.values():
            out.calls += s.calls
            out.tokens_in += s.tokens_in
            out.tokens_out += s.tokens_out
            out.images += s.images
        return out

    def as_dict(self) -> dict:
        t = self.total
        return {"videos": [{"video": v, "duration_sec": round(d, 1)} for v, d in self.videos],
                "model": self.model, "calls": t.calls, "input_tokens": t.tokens_in, "output_tokens": t.tokens_out,
                "images": t.images, "cost_usd": None if self.cost is None else round(self.cost, 4),
                "wall_seconds": round(self.seconds),
                "stages": {k: vars(v) for k, v in self.stages.items()}}

    def render(self) -> str:
        t = self.total
        minutes = sum(d for _, d in self.videos) / 60
        lines = [f"Estimate for {len(self.videos)} video(s), {minutes:.1f} min of video (no model was called):"]
        for name, s in self.stages.items():
            lines.append(f"  {name:<10} {s.calls:>5} call(s) {s.tokens_in:>11,} in {s.tokens_out:>9,} out "
                         f"{s.images:>6} image(s)")
        lines.append(f"  total      {t.calls:>5} call(s) {t.tokens_in:>11,} in {t.tokens_out:>9,} out "
                     f"{t.images:>6} image(s)")
        if self.cost is not None:
            source = f" (prices: {self.price_source})" if self.price_source else ""
            lines.append(f"Cost: about ${self.cost:.4f} with {self.model}'s prices{source}")
        else:
            lines.append(f"Cost: no price for {self.model or 'the model'!r} in genai-prices' table (add it to "
                         "prices.toml, $MEMTOOLS_PRICES or --prices FILE: [models.\"NAME\"] input = ..., "
                         "output = ... dollars per million tokens)")
        lines.append(f"Wall time: about {_duration(self.seconds)} with the concurrency set "
                     f"(at {SECONDS_PER_CALL:.0f} s a call)")
        lines.append("Episodes and answer lengths are the model's choice: expect the real numbers within a few "
                     "tens of percent.")
        return "\n".join(lines)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _tokens(text: str, images: int, image_tokens: int) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) + images * image_tokens


def typical_episode_sec(config: BuildConfig) -> float:
    """The episode length assumed: a fifth of a window, within the preset's episode bounds."""
    return min(max(config.window_sec / 5, config.min_episode_sec, 1.0), config.max_episode_sec)


SAMPLE_WINDOWS = 50
"""A video longer than this many segmentation windows is estimated from a sample of that many (its windows
are alike), scaled to its length: the estimate's work does not grow with the video (a duration of years answers
as fast as an hour)."""


@dataclass
class _Plan:
    """One video's stages and the calls it makes one after another."""

    stages: dict[str, StageEstimate]
    critical: float


def _segments(duration: float, config: BuildConfig, episode: float, image_tokens: int,
              names: LibraryNames | None) -> tuple[StageEstimate, StageEstimate, list[tuple[float, float]], int]:
    """The segmentation and extraction calls of ``duration`` seconds, its episode spans and window count."""
    segment, extract = StageEstimate(), StageEstimate()
    spans: list[tuple[float, float]] = []
    start, index = 0.0, 0
    while start < duration - 1e-6:
        window = plan_window(index, start, duration, config)
        times = uniform_times(window.end - window.start, n=config.frames_per_window, start=window.start)
        prompt = segmentation_prompt(window.start, window.end, at_video_end=window.at_end,
                                     min_sec=config.min_episode_sec, max_sec=config.max_episode_sec,
                                     n_frames=len(times))
        n = max(1, round((window.end - window.start) / episode))
        step = (window.end - window.start) / n
        spans += [(window.start + i * step, window.start + (i + 1) * step) for i in range(n)]
        segment.add(_tokens(prompt.system + prompt.text, len(times), image_tokens),
                    n * ANSWER_TOKENS["segment_episode"], len(times))
        start, index = window.end, index + 1
    for t0, t1 in spans:
        times = uniform_times(t1 - t0, n=config.frames_per_macro, start=t0)
        prompt = extraction_prompt(f"Scene at {t0:.0f}", t1 - t0, n_frames=len(times), names=names)
        extract.add(_tokens(prompt.system + prompt.text, len(times), image_tokens), ANSWER_TOKENS["extract"],
                    len(times))
    return segment, extract, spans, index


def _scaled(stage: StageEstimate, factor: float) -> StageEstimate:
    return StageEstimate(round(stage.calls * factor), round(stage.tokens_in * factor),
                         round(stage.tokens_out * factor), round(stage.images * factor))


def _aggregation(spans: list[tuple[float, float]], n_spans: int, config: BuildConfig,
                 image_tokens: int) -> tuple[StageEstimate, int]:
    """The aggregation calls of ``n_spans`` episodes (``spans``, or a sample of them when there are more) and how
    many parts: with more episodes than ``spans``, one prompt is sized per part length (``agg.chunks`` makes at
    most two, ``n // parts`` and one more), so the work does not grow with ``n_spans``."""
    stage = StageEstimate()
    n_parts = max(1, math.ceil(n_spans / config.aggregate_chunk))
    if n_spans <= len(spans):
        parts = [(list(part), 1) for part in agg.chunks(n_spans, config.aggregate_chunk)]
    else:
        base, rest = divmod(n_spans, n_parts)
        parts = [(list(range(length)), count) for length, count in ((base, n_parts - rest), (base + 1, rest))
                 if count]
    for part, count in parts:
        briefs = [MacroBrief(macro_id=f"macro_{i:04d}", label=f"Scene at {spans[i % len(spans)][0]:.0f}",
                             t_start=spans[i % len(spans)][0], t_end=spans[i % len(spans)][1],
                             summary=_BRIEF_SUMMARY, key_entities=["a person", "a thing"], event_types=["action"],
                             ocr_texts=[]) for i in part]
        prompt = aggregation_prompt(briefs, with_root=n_parts == 1, target_supers=agg.target_supers(len(part)))
        stage.calls += count
        stage.tokens_in += count * _tokens(prompt.system + prompt.text, 0, image_tokens)
        stage.tokens_out += count * (ANSWER_TOKENS["aggregate_base"] + len(part) * ANSWER_TOKENS["aggregate_macro"])
    if n_parts > 1:  # the root of a chunked build
        stage.add(400 * n_parts, ANSWER_TOKENS["aggregate_base"] * 2, 0)
    return stage, n_parts


def _plan(duration: float, config: BuildConfig, episode: float, image_tokens: int,
          names: LibraryNames | None) -> _Plan:
    """One video's plan: walked window by window up to ``SAMPLE_WINDOWS``, beyond that a sample scaled."""
    sample = SAMPLE_WINDOWS * config.window_sec
    factor = duration / sample if duration > sample else 1.0
    segment, extract, spans, windows = _segments(min(duration, sample), config, episode, image_tokens, names)
    if factor > 1.0:
        segment, extract = _scaled(segment, factor), _scaled(extract, factor)
        windows = round(windows * factor)
    n_spans = extract.calls
    aggregate, parts = _aggregation(spans, n_spans, config, image_tokens)
    return _Plan({"segment": segment, "extract": extract, "aggregate": aggregate},
                 windows + 1 + (parts > 1))


def estimate_build(videos: Sequence[VideoInfo | tuple[str, float]], config: BuildConfig, *, model: str = "",
                   prices: PriceTable | None = None, image_tokens: int = IMAGE_TOKENS,
                   episode_sec: float | None = None, library: bool = False) -> BuildEstimate:
    """The estimate of building ``videos`` (probed, or ``(name, seconds)``) with ``config``.

    ``image_tokens``: what the model counts per frame (``vlm.tokens_per_image`` where a backend knows).
    ``library``: the memory already has a library layer, so the first video's prompts offer its names too.
    Its work is bounded per video, whatever the duration (``SAMPLE_WINDOWS``); a duration that is not a finite
    number of seconds is a ``ValueError``.
    """
    episode = episode_sec or typical_episode_sec(config)
    out = BuildEstimate(model=model)
    stages = {name: StageEstimate() for name in ("segment", "extract", "aggregate")}
    critical = 0.0  # calls one after another: windows, then the aggregation
    for number, video in enumerate(videos):
        name, duration = (video.path.name, video.duration) if isinstance(video, VideoInfo) else video
        if not math.isfinite(float(duration)) or float(duration) < 0:
            raise ValueError(f"{name}: a duration of {duration!r} seconds cannot be estimated")
        names = largest_offer() if library or number else None
        out.videos.append((str(name), float(duration)))
        plan = _plan(float(duration), config, episode, image_tokens, names)
        for key, stage in plan.stages.items():
            total = stages[key]
            total.calls += stage.calls
            total.tokens_in += stage.tokens_in
            total.tokens_out += stage.tokens_out
            total.images += stage.images
        critical += plan.critical
    out.stages = stages
    total = out.total
    out.seconds = SECONDS_PER_CALL * max(critical, math.ceil(total.calls / max(1, config.concurrency)))
    if prices is not None:
        out.cost = prices.cost(model, Tally(total.calls, total.tokens_in, total.tokens_out))
        out.price_source = prices.source_of(model) if out.cost is not None else ""
    return out


def model_name(settings) -> str:
    """The model a ``BuildSettings`` names, without building its client (``openai:gpt-4o-mini`` -> ``gpt-4o-mini``)."""
    if settings.replay:
        return "replay"
    spec = settings.vlm or ""
    return spec.split(":", 1)[1] if ":" in spec and not spec.startswith("python:") else spec
