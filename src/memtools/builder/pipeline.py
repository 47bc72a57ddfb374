"""The construction pipeline: probe -> keyframes -> segment -> extract -> aggregate -> index.

    from memtools.builder import BuildConfig, build_video
    report = build_video(memory, vlm, "talk.mp4", config=BuildConfig.short())

Segmentation is streaming: windows go to the model one after another, and the macro events
of each window are extracted (concurrently, up to ``config.concurrency`` calls in flight)
while the next window is segmented. Keyframes are selected on a thread meanwhile.
Aggregation runs once every macro event is extracted, in chunks of ``aggregate_chunk``
macro events when there are more. Everything is checkpointed (``memtools.builder.checkpoint``)
and deterministic, and nothing is written to the memory before the whole video is done.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

from memtools.builder import aggregate as agg
from memtools.builder.assemble import assemble
from memtools.builder.calls import ModelCalls
from memtools.builder.checkpoint import Checkpoints
from memtools.builder.config import BuildConfig
from memtools.builder.extract import Extracted, MacroSpan, clean_subgraph
from memtools.builder.faces import find_faces
from memtools.builder.frames import FrameGrid, FrameReader, grid_step
from memtools.builder.indexing import index_video
from memtools.builder.keyframes import KeyframeWriter, stored_keyframes
from memtools.builder.progress import Progress, ProgressSink
from memtools.builder.prompts import (
    MacroBrief,
    SuperBrief,
    aggregation_prompt,
    extraction_prompt,
    root_prompt,
    segmentation_prompt,
)
from memtools.builder.report import BuildSummary, VideoReport
from memtools.builder.segment import Window, clean_window, plan_window
from memtools.builder.speakers import Embedder, label_speakers
from memtools.builder.speech import macro_speech, transcribe, window_transcript
from memtools.builder.turns import take_build_turn
from memtools.builder.vocabulary import ClipVocabulary
from memtools.errors import BuildError
from memtools.faces.models import FaceModel
from memtools.perception import VLM
from memtools.perception.base import run_sync
from memtools.schema import VideoGraph, macro_id, slugify_video_id
from memtools.speech.base import Recognizer, Utterance
from memtools.speech.speakers import Voice
from memtools.store import Memory
from memtools.store.catalog.failures import clear_failure, record_failure
from memtools.store.tables.faces import save_faces
from memtools.store.tables.voices import save_voices
from memtools.store.writes.frame_swap import staged_folder, staging_root
from memtools.video import VideoInfo, probe, uniform_times

SEGMENT_TOKENS = 2048
EXTRACT_TOKENS = 4096
AGGREGATE_TOKENS = 6144
MAX_SEGMENT_WINDOWS = 100_000


class _VideoBuild:
    """The state of building one video."""

    def __init__(self, memory: Memory, vlm: VLM, source: Path, info: VideoInfo, video_id: str,
                 config: BuildConfig, progress: Progress, report: VideoReport,
                 speech: Recognizer | None = None, speakers: Embedder | None = None,
                 faces: FaceModel | None = None) -> None:
        self.memory, self.source, self.video_id, self.config = memory, source, video_id, config
        self.speech, self.speakers, self.faces = speech, speakers, faces
        self.voices: list[Voice] = []
        self.transcript: list[Utterance] = []
        self.info = info.model_copy(update={"path": source})
        self.progress, self.report = progress, report
        self.checkpoints = Checkpoints(memory.work_dir(video_id))
        self.frames_root = staging_root(memory.work_dir(video_id))  # keyframe files until the write swaps them in
        self.calls = ModelCalls(vlm, self.checkpoints, concurrency=config.concurrency,
                                max_retries=config.max_retries, usage=report.usage, on_change=progress.refresh)
        self.vocabulary = ClipVocabulary.of(memory, video_id)  # the library's names, offered per clip

    async def run(self) -> None:
        graph = await self.perceive()
        faces = None if self.faces is None else await find_faces(self.faces, graph.keyframes, self.frames_root,
                                                                 self.checkpoints)  # from the staged keyframes
        # voices and faces before the write, so the library layer it computes sees them (people)
        if self.speakers is not None:
            await asyncio.to_thread(save_voices, self.memory.path, self.video_id, self.voices)
        if faces is not None:
            await asyncio.to_thread(save_faces, self.memory.path, self.video_id, faces)
        await index_video(self.memory, graph, self.progress, frames=self.frames_root)  # counts the texts it embeds

    async def perceive(self) -> VideoGraph:
        """Everything but the write: the assembled graph (keyframe files are staged in ``frames_root``)."""
        cfg = self.config
        if self.speech is not None:
            self.progress.begin("speech")
            self.transcript = await transcribe(self.speech, self.source, self.checkpoints,
                                               on_chunk=lambda i, reused: self.progress.advance("speech"))
            self.progress.finish("speech")
        if self.speakers is not None and self.transcript:
            self.progress.begin("speakers")
            self.transcript, self.voices = await label_speakers(self.speakers, self.source, self.transcript,
                                                                self.checkpoints)
            self.progress.finish("speakers")
        step = grid_step(cfg, self.info.fps)
        keyframes = stored_keyframes(self.checkpoints, self.frames_root)
        staged = staged_folder(self.memory.path, self.memory.frames_dir(self.video_id), self.frames_root)
        writer = None if keyframes is not None else KeyframeWriter(
            cfg.keyframes, staged, self.frames_root, self.checkpoints)
        self.frames = FrameReader(self.source, FrameGrid(self.info.duration, step), max_side=cfg.frame_max_side,
                                  keyframes=writer, keyframe_stride=round(cfg.keyframes.sample_every_sec / step),
                                  max_ahead=math.ceil(3 * cfg.window_sec / step) + 16)
        self.frames.hold("segment", 0.0)
        self.progress.begin("keyframes")
        if writer is not None:
            self.frames.start()
        try:
            extracted = await self._segment_and_extract()
            if writer is None:
                self.frames.stop()  # keyframes are stored: nothing else needs the rest of the video
            await self.frames.finish()
        finally:
            self.frames.stop()
        keyframes = writer.stored if writer is not None else (keyframes or [])
        self.progress.finish("keyframes")
        chunk_results, root_result = await self._aggregate(extracted)
        graph = assemble(self.video_id, self.info, self.source, extracted, chunk_results, root_result, keyframes)
        results: list[Window | Extracted | agg.ChunkResult | agg.RootResult] = [
            *self.windows, *extracted, *chunk_results, *([root_result] if root_result else [])]
        for item in results:
            self.report.issues += item.issues
        self.report.counts = {"super": len(graph.supers), "macro": len(graph.macros),
                              "entity": len(graph.entities), "event": len(graph.events), "ocr": len(graph.ocr),
                              "keyframe": len(graph.keyframes), "edges": len(graph.edges),
                              **({"speech": len(graph.speech)} if graph.speech else {})}
        return graph

    # --- segmentation + extraction ---------------------------------------------------------

    async def _segment_and_extract(self) -> list[Extracted]:
        tasks: list[asyncio.Task[Extracted]] = []
        self.windows: list[Window] = []
        self.progress.begin("segment")
        self.progress.begin("extract")
        start, ordinal, index = 0.0, 0, 0
        self.calls.segmenting(True)
        try:
            while start < self.info.duration - 1e-6:
                if index >= MAX_SEGMENT_WINDOWS:
                    raise BuildError(f"segmentation of {self.video_id} did not converge")
                self.frames.hold("segment", start)
                window = await self._segment_window(plan_window(index, start, self.info.duration, self.config))
                self.windows.append(window)
                self.progress.advance("segment")
                for episode in window.episodes:
                    span = MacroSpan(id=macro_id(self.video_id, ordinal), ordinal=ordinal, t_start=episode.t_start,
                                     t_end=episode.t_end, label=episode.title)
                    self.frames.hold(span.id, span.t_start)
                    tasks.append(asyncio.create_task(self._extract(span)))
                    self.progress.add_total("extract", 1)
                    ordinal += 1
                if window.next_start <= start + 1e-6:
                    raise BuildError(f"segmentation of {self.video_id} made no progress at {start:.1f}s")
                start, index = window.next_start, index + 1
            self.frames.release("segment")
            self.calls.segmenting(False)
            self.progress.finish("segment")
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _segment_window(self, window: Window) -> Window:
        name = f"segment/window_{window.index:03d}"
        cached = self.checkpoints.load(name)
        if cached is not None:
            self._reused(f"window_{window.index:03d}")
            return Window.model_validate(cached)
        cfg = self.config
        times = uniform_times(window.end - window.start, n=cfg.frames_per_window, start=window.start)
        prompt = segmentation_prompt(window.start, window.end, at_video_end=window.at_end,
                                     min_sec=cfg.min_episode_sec, max_sec=cfg.max_episode_sec, n_frames=len(times),
                                     transcript=window_transcript(self.transcript, window.start, window.end))
        answer, issues = await self.calls.ask("segment", f"window_{window.index:03d}", prompt,
                                              lambda: self.frames.at(times, seek=True), max_tokens=SEGMENT_TOKENS)
        step = (window.end - window.start) / max(1, len(times))
        window = clean_window(window.model_copy(update={"issues": issues}), answer, cfg, step)
        self.checkpoints.save(name, window.model_dump(mode="json"))
        return window

    async def _extract(self, span: MacroSpan) -> Extracted:
        try:
            return await self._extract_step(span)
        finally:
            self.frames.release(span.id)

    async def _extract_step(self, span: MacroSpan) -> Extracted:
        short = span.id.rsplit("/", 1)[-1]
        name = f"extract/{short}"
        cached = self.checkpoints.load(name)
        if cached is not None:
            self._reused(short)
            self.progress.advance("extract")
            return Extracted.model_validate(cached)
        cfg = self.config
        length = span.t_end - span.t_start
        times = uniform_times(length, n=cfg.frames_per_macro, start=span.t_start)
        said, transcript = macro_speech(self.transcript, span.t_start, span.t_end, self.info.duration)
        prompt = extraction_prompt(span.label, length, n_frames=len(times), transcript=transcript,
                                   names=await self.vocabulary.for_clip(span.label, said))
        answer, issues = await self.calls.ask("extract", short, prompt,
                                              lambda: self.frames.at(times, origin=span.t_start),
                                              max_tokens=EXTRACT_TOKENS)
        result = clean_subgraph(answer, span, self.video_id, said)
        result.issues[:0] = issues
        self.checkpoints.save(name, result.model_dump(mode="json"))
        self.progress.advance("extract")
        return result

    def _reused(self, step: str) -> None:
        """Count the answers a finished step kept in its checkpoints."""
        self.report.usage.cached_calls += len(list((self.checkpoints.folder / "calls").glob(f"{step}-a*.json")))

    # --- aggregation -------------------------------------------------------------------------

    async def _aggregate(self, extracted: Sequence[Extracted]) -> tuple[list[agg.ChunkResult], agg.RootResult | None]:
        briefs = [_brief(x) for x in extracted]
        parts = agg.chunks(len(briefs), self.config.aggregate_chunk)
        chunked = len(parts) > 1
        self.progress.begin("aggregate", len(parts) + (1 if chunked else 0))
        results = list(await asyncio.gather(*(self._aggregate_chunk(i, [briefs[j] for j in part], not chunked)
                                              for i, part in enumerate(parts))))
        root = await self._root(results, extracted) if chunked else None
        self.progress.finish("aggregate")
        return results, root

    async def _aggregate_chunk(self, index: int, briefs: list[MacroBrief], with_root: bool, *,
                               step: str | None = None) -> agg.ChunkResult:
        step = step or f"chunk_{index:02d}"  # a live build names each version of its growing tail chunk
        name = f"aggregate/{step}"
        cached = self.checkpoints.load(name)
        if cached is None:
            prompt = aggregation_prompt(briefs, with_root=with_root, target_supers=agg.target_supers(len(briefs)))
            answer, issues = await self.calls.ask("aggregate", step, prompt, _no_frames,
                                                  max_tokens=AGGREGATE_TOKENS)
            result = agg.clean_chunk(index, answer, briefs)
            result.issues[:0] = issues
            self.checkpoints.save(name, result.model_dump(mode="json"))
        else:
            self._reused(step)
            result = agg.ChunkResult.model_validate(cached)
        self.progress.advance("aggregate")
        return result

    async def _root(self, results: Sequence[agg.ChunkResult], extracted: Sequence[Extracted], *,
                    step: str = "root") -> agg.RootResult:
        cached = self.checkpoints.load(f"aggregate/{step}")
        if cached is not None:
            self._reused(step)
            return agg.RootResult.model_validate(cached)
        spans = {x.macro.id.rsplit("/", 1)[-1]: x.macro for x in extracted}
        supers: list[SuperBrief] = []
        for chunk in results:
            for draft in chunk.supers:
                members = [spans[m] for m in draft.macros]
                supers.append(SuperBrief(super_id=f"super_{len(supers):02d}", label=draft.label,
                                         t_start=members[0].t_start, t_end=members[-1].t_end,
                                         description=draft.description, key_entities=draft.key_entities))
        answer, issues = await self.calls.ask("aggregate", step, root_prompt(supers), _no_frames,
                                              max_tokens=AGGREGATE_TOKENS)
        result = agg.clean_root(answer, [s.super_id for s in supers])
        result.issues[:0] = issues
        self.checkpoints.save(f"aggregate/{step}", result.model_dump(mode="json"))
        self.progress.advance("aggregate")
        return result


async def _no_frames() -> list[tuple[float, bytes]]:
    return []


def _brief(x: Extracted) -> MacroBrief:
    return MacroBrief(macro_id=x.macro.id.rsplit("/", 1)[-1], label=x.macro.label, t_start=x.macro.t_start,
                      t_end=x.macro.t_end, summary=x.summary, key_entities=x.key_entities,
                      event_types=list(dict.fromkeys(e.event_type for e in x.events if e.event_type))[:8],
                      ocr_texts=list(dict.fromkeys(o.text for o in x.ocr))[:8])


# --- the public entry points -----------------------------------------------------------------


def resolve_video_id(source: str | os.PathLike, video_id: str | None = None) -> str:
    return video_id or slugify_video_id(Path(source).name)


async def abuild_video(memory: Memory, vlm: VLM, source: str | os.PathLike, *, video_id: str | None = None,
                       config: BuildConfig | None = None, progress: Progress | None = None, fresh: bool = False,
                       info: VideoInfo | None = None, speech: Recognizer | None = None,
                       speakers: Embedder | None = None, faces: FaceModel | None = None) -> VideoReport:
    """Build (or resume building) one video into ``memory``; returns its report.

    ``speech`` (a ``memtools.speech`` recogniser) adds what is said: a checkpointed speech stage before
    segmentation, the transcript in the prompts, Speech nodes in the memory.
    ``speakers`` (a ``memtools.speech.voice.VoiceEncoder``) labels who says each utterance
    (``S1``, ``S2``, ... per video, clustered on voice vectors) when the recogniser gives no speaker.
    ``faces`` (``memtools.faces.DlibFaces``) clusters the faces on the keyframes (``faces/<id>.json``).

    Raises ``VideoError`` for an unreadable file before anything is written, ``PerceptionError`` when the backend
    fails for good (checkpoints are kept: the same build again resumes). Whatever the model answers, it finishes.
    """
    config, progress = config or BuildConfig.default(), progress or Progress()
    started = time.monotonic()
    path = Path(source).resolve()
    if info is None:
        info = await asyncio.to_thread(probe, path)
    vid = resolve_video_id(path, video_id)
    release = await asyncio.to_thread(take_build_turn, memory, vid)  # one build of a video at a time (turns.py)
    try:
        report = VideoReport(video_id=vid, source=str(path), duration=info.duration)
        progress.start_video(vid, progress.video_index, report.usage)
        checkpoints = Checkpoints(memory.work_dir(vid))
        memory.refresh()
        state = {"content_hash": info.content_hash, "config": config.fingerprint(),
                 **({"speech": speech.name} if speech is not None else {})}
        # speakers are no part of the state: the voice weights must not rebuild every video (repair --speakers does)
        entry = memory.manifest.videos.get(vid)
        done = checkpoints.load("done")
        if not fresh and done == state and entry is not None and entry.status == "ready":
            report.skipped, report.counts = True, dict(entry.counts)
            return report
        report.resumed = await asyncio.to_thread(checkpoints.prepare, state, fresh=fresh)
        replacing = entry is not None and entry.status == "ready"  # the old version stays ready until the new lands
        if not replacing:
            memory.set_status(vid, "building")
        clear_failure(checkpoints.folder)
        try:
            await _VideoBuild(memory, vlm, path, info, vid, config, progress, report, speech, speakers, faces).run()
        except BaseException as exc:
            if not replacing:  # a failed rebuild leaves the old version whole, frames included (the error says why)
                record_failure(checkpoints.folder, exc, path)  # memtools info and the tools say why, and what to run
                memory.set_status(vid, "failed")
            raise
        report.seconds = round(time.monotonic() - started, 3)
        checkpoints.save("report", report.model_dump(mode="json"))
        checkpoints.save("done", state)
        return report
    finally:
        release()


def build_video(memory: Memory, vlm: VLM, source: str | os.PathLike, **options) -> VideoReport:
    """Blocking ``abuild_video``."""
    return run_sync(lambda: abuild_video(memory, vlm, source, **options))


async def abuild_videos(memory: Memory, vlm: VLM, sources: Sequence[str | os.PathLike], *,
                        video_ids: Sequence[str | None] | None = None, config: BuildConfig | None = None,
                        sink: ProgressSink | None = None, fresh: bool = False,
                        infos: Sequence[VideoInfo] | None = None,
                        speech: Recognizer | Sequence[Recognizer | None] | None = None,
                        speakers: Embedder | None = None, faces: FaceModel | None = None) -> BuildSummary:
    """Build several videos one after another (each with ``config.concurrency`` calls in flight).

    Every file is probed first, so an unreadable one fails the run before the memory is touched.
    """
    started = time.monotonic()
    ids = list(video_ids) if video_ids is not None else [None] * len(sources)
    if infos is None:
        infos = [await asyncio.to_thread(probe, Path(s).resolve()) for s in sources]
    resolved = [resolve_video_id(s, i) for s, i in zip(sources, ids, strict=True)]
    dupes = sorted({v for v in resolved if resolved.count(v) > 1})
    if dupes:
        raise BuildError(f"two inputs would get the same video id {dupes[0]!r}; rename one or build them apart "
                         "with --video-id")
    progress = Progress(sink, video_count=len(sources))
    summary = BuildSummary()
    speeches = list(speech) if isinstance(speech, Sequence) else [speech] * len(sources)  # one per video or shared
    try:
        for index, (source, info, vid) in enumerate(zip(sources, infos, resolved, strict=True)):
            progress.video_index = index
            summary.videos.append(await abuild_video(memory, vlm, source, video_id=vid, config=config,
                                                     progress=progress, fresh=fresh, info=info,
                                                     speech=speeches[index], speakers=speakers, faces=faces))
    finally:
        progress.close()
    summary.seconds = round(time.monotonic() - started, 3)
    return summary


def build_videos(memory: Memory, vlm: VLM, sources: Sequence[str | os.PathLike], **options) -> BuildSummary:
    """Blocking ``abuild_videos``."""
    return run_sync(lambda: abuild_videos(memory, vlm, sources, **options))
