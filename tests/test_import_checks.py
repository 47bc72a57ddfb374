"""Caption imports never change input silently, read JSON as a stream, and refuse broken files
before writing anything (issue 9, items 2 and 3)."""

from __future__ import annotations

import json
import math
import tracemalloc

import pytest

from caption_import_support import dense_file as _dense
from caption_import_support import one_caption as _one
from caption_import_support import run_import as _import
from memtools.cli import main
from memtools.errors import ImportFormatError, StoreError
from memtools.importers.caption_checks import NON_FINITE, Caption, CaptionedVideo, ImportNotes, clean_captions
from memtools.importers.captions import read_caption_file, read_subtitles
from memtools.importers.dense_captions import read_dense_captions, scan_dense_captions
from memtools.store import Memory
from memtools.store.graph.cypher import translate


def test_every_repair_is_counted_with_file_video_and_caption(tmp_path, capsys):
    source = _dense(tmp_path / "caps.json", {
        "v_a": {"duration": 20.0, "timestamps": [[-2.0, 3.0], [9.0, 6.0], [4.0, 5.0], [10.0, 33.5]],
                "sentences": ["starts early", "ends before it starts", "   ", "runs past the end"]},
        "v_b": {"duration": 50.0, "timestamps": [[1.0, 4.0]], "sentences": ["fine"]},
    })
    code, out, _, memory = _import(tmp_path, capsys, source)
    assert code == 0
    assert "Imported 2 video(s): 4 captions" in out
    assert "1 caption(s) started before 0: start set to 0" in out and "video v_a, caption 1" in out
    assert "1 caption(s) ended before they started: made zero-length" in out and "caption 2)" in out
    assert "1 empty caption(s) dropped" in out and "caption 3)" in out
    assert "duration extended" in out and "20 s -> 33.5 s" in out
    assert "v_b" not in out.split("Changed or left out")[1]
    with Memory.open(memory) as m:
        assert m.manifest.videos["v_a"].duration == 33.5


def test_times_written_as_text_are_rejected_per_caption_and_the_rest_lands(tmp_path, capsys):
    source = tmp_path / "caps.json"
    # Times written as strings ("nan", "-inf", "12.5") are not numbers: rejected, never converted.
    source.write_text('{"v_a": {"duration": 20, "timestamps": [["nan", 3], [1, "-inf"], ["4", 6], [4, 6]],'
                      ' "sentences": ["bad start", "bad end", "text start", "good"]}}', encoding="utf-8")
    code, out, _, memory = _import(tmp_path, capsys, source)
    assert code == 0
    assert "3 caption(s) rejected: the timestamp is not [start, end] in numbers (not imported)" in out
    assert "video v_a, caption 1: ['nan', 3]" in out and "video v_a, caption 2: [1, '-inf']" in out
    assert "Imported 1 video(s): 1 captions" in out


def test_nan_and_infinite_times_from_python_are_rejected_per_caption():
    notes = ImportNotes()
    video = CaptionedVideo("v_a", [Caption(math.nan, 3, "a"), Caption(1, math.inf, "b"), Caption(4, 6, "c")], 20.0)
    cleaned = clean_captions(video, "api", notes)
    assert [c.text for c in cleaned.captions] == ["c"]
    assert notes.counts[NON_FINITE] == 2 and notes.rejected == 2


def test_a_json_nan_literal_names_the_file_and_video_and_writes_nothing(tmp_path, capsys):
    source = tmp_path / "caps.json"
    source.write_text('{"v_a": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["ok"]},\n'
                      ' "v_b": {"duration": 9, "timestamps": [[NaN, 2]], "sentences": ["bad"]}}', encoding="utf-8")
    code, _, err, memory = _import(tmp_path, capsys, source)
    assert code == 1
    assert str(source) in err and "in video 'v_b'" in err and "NaN" in err
    assert "Traceback" not in err and "pydantic" not in err
    assert not (memory / "memtools.json").exists()  # refused before the first write


def test_a_truncated_json_file_is_refused_before_any_write(tmp_path, capsys):
    good = tmp_path / "good.json"
    _dense(good, {"v_a": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["ok"]}})
    assert _import(tmp_path, capsys, good)[0] == 0
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({f"v{i}": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["x"]}
                                  for i in range(50)})[:-40], encoding="utf-8")
    code, _, err, memory = _import(tmp_path, capsys, broken)
    assert code == 1 and "is not valid JSON" in err and "near byte" in err
    with Memory.open(memory) as m:
        assert m.video_ids() == ["v_a"]


def _peak_while_reading(source) -> tuple[int, int]:
    tracemalloc.start()
    try:
        count = sum(1 for _ in read_dense_captions(source))
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_dense_caption_json_is_read_as_a_stream(tmp_path):
    def videos(n):
        return {f"v{i:05d}": {"duration": 100.0, "timestamps": [[k, k + 5.0] for k in range(0, 60, 10)],
                              "sentences": [f"video {i} does thing number {k} with some words" for k in range(6)]}
                for i in range(n)}

    small, big = _dense(tmp_path / "small.json", videos(250)), _dense(tmp_path / "big.json", videos(8000))
    _peak_while_reading(small)  # imports and caches warmed up
    _, small_peak = _peak_while_reading(small)
    count, big_peak = _peak_while_reading(big)
    size = big.stat().st_size
    assert count == 8000 and size > 3_000_000
    # Reading 32x more videos holds hardly more memory: one video at a time, never the file.
    assert big_peak < small_peak + size / 10, f"{big_peak:,} vs {small_peak:,} bytes for a {size:,}-byte file"
    counts = scan_dense_captions(big)
    assert (counts.videos, counts.captions) == (8000, 48000)


def test_the_database_layout_still_reads(tmp_path):
    source = _dense(tmp_path / "db.json", {"database": {"v_a": {"duration": 9, "timestamps": [[1, 2]],
                                                                "sentences": ["ok"]}}})
    assert [v.video_id for v in read_dense_captions(source)] == ["v_a"]


@pytest.mark.parametrize("text", ["[1, 2]", "", '{"v_a": {"timestamps": [[1, 2]]}}',
                                  '{"v_a": {"timestamps": [[1, 2]], "sentences": "x"}}',
                                  '{"v_a": {"timestamps": {"a": 1}, "sentences": ["x"]}}', '{"v_a": "x"}',
                                  '{"v_a": {"timestamps": [[1, 2]], "sentences": ["x"]}} trailing',
                                  '{"v_a": {"timestamps": [[' + "9" * 5000 + ', 2]], "sentences": ["x"]}}',
                                  '{"v_a": {"duration": 1e999, "timestamps": [], "sentences": []}}'])
def test_wrong_layouts_are_one_clear_error(tmp_path, text):
    source = tmp_path / "x.json"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(ImportFormatError, match=str(source).replace("\\", "\\\\")):
        list(read_dense_captions(source))


def test_cp1252_subtitles_decode_with_a_notice_and_encoding_chooses(tmp_path, capsys):
    srt = tmp_path / "talk.srt"
    srt.write_bytes("1\n00:00:01,000 --> 00:00:03,000\nCafé crème, naïve résumé\n".encode("cp1252"))
    notes = ImportNotes()
    [caption] = read_subtitles(srt, notes=notes)
    assert caption.text == "Café crème, naïve résumé"
    assert any("decoded as cp1252" in line for line in notes.render())
    assert read_subtitles(srt, encoding="latin-1")[0].text == "Café crème, naïve résumé"
    with pytest.raises(ImportFormatError, match="not valid utf-8.*--encoding"):
        read_subtitles(srt, encoding="utf-8")
    with pytest.raises(ImportFormatError, match="unknown encoding 'klingon'"):
        read_subtitles(srt, encoding="klingon")
    code, out, _, _ = _import(tmp_path, capsys, srt)
    assert code == 0 and "decoded as cp1252" in out


def test_subtitle_cues_that_end_before_they_start_are_kept_and_counted(tmp_path):
    srt = tmp_path / "talk.srt"
    srt.write_text("1\n00:00:05,000 --> 00:00:03,000\nbackwards\n\n2\n00:00:06,000 --> 00:00:07,000\n\n",
                   encoding="utf-8")
    notes = ImportNotes()
    [video] = read_caption_file(srt, notes=notes)
    assert [(c.start, c.end, c.text) for c in video.captions] == [(5.0, 5.0, "backwards")]
    assert notes.counts and len(notes.render()) == 2


def test_a_full_buffer_pool_is_a_memtools_error_not_kuzus_words():
    error = translate(RuntimeError("Buffer manager exception: Unable to allocate memory! The buffer pool is full "
                                   "and no memory could be freed!"), "writing 200 videos")
    assert isinstance(error, StoreError)
    assert "ran out of memory while writing 200 videos" in str(error) and "--batch-size" in str(error)
    assert "Buffer manager" not in str(error)


def test_a_large_file_says_it_is_being_checked_first(tmp_path, capsys):
    big = tmp_path / "big.json"
    videos = {f"v{i:05d}": {"duration": 100.0, "timestamps": [[1, 5]], "sentences": ["x" * 200]} for i in range(5000)}
    big.write_text(json.dumps(videos)[:-10], encoding="utf-8")  # over 1 MB, broken at the end
    code, _, err, memory = _import(tmp_path, capsys, big)
    assert code == 1
    assert f"checking {big} (1 MB) ..." in err and "is not valid JSON" in err
    assert not (memory / "memtools.json").exists()


# --- issue 22: ids that never collide, bounded parsing, types checked not coerced -------------------------

def _peak_rss_refusing(tmp_path, text: bytes) -> tuple[str, int]:
    """Refuse ``text`` as caption JSON in a fresh interpreter; its message and its peak RSS in bytes.

    The peak is the child's VmHWM (Linux): ``getrusage``'s ru_maxrss, for RUSAGE_SELF in the child
    or RUSAGE_CHILDREN here, keeps the RSS of the forked test process across exec (hundreds of MB)."""
    import subprocess
    import sys
    from pathlib import Path

    if not Path("/proc/self/status").is_file():
        pytest.skip("peak memory of a child process is read from /proc (Linux)")
    source = tmp_path / "hostile.json"
    source.write_bytes(text)
    script = ("import sys\n"
              "from memtools.errors import ImportFormatError\n"
              "from memtools.importers.dense_captions import read_dense_captions\n"
              "try:\n    list(read_dense_captions(sys.argv[1]))\nexcept ImportFormatError as exc:\n    print(exc)\n"
              "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')))\n")
    done = subprocess.run([sys.executable, "-c", script, str(source)], capture_output=True, text=True, timeout=120,
                          check=True)
    message, peak_kib = done.stdout.strip().rsplit("\n", 1)
    return message, int(peak_kib) * 1024


def test_deep_nesting_is_refused_at_once_in_little_memory(tmp_path):
    depth = 200_000  # 400 KB: ijson's own prefixes made this 21 GB
    message, peak = _peak_rss_refusing(tmp_path, b'{"v": {"timestamps": ' + b"[" * depth + b"]" * depth + b"}}")
    assert "hostile.json is refused in video 'v'" in message and "nests deeper than 32 levels" in message
    assert "near byte" in message
    assert peak < 200e6, f"peak RSS {peak / 1e6:.0f} MB"


def test_an_endless_string_is_refused_before_it_is_read_whole(tmp_path):
    message, peak = _peak_rss_refusing(tmp_path, b'{"v": {"sentences": ["' + b"x" * 60_000_000 + b'"]}}')
    assert "in video 'v'" in message and "one value runs over 4 MB" in message
    assert peak < 200e6, f"peak RSS {peak / 1e6:.0f} MB"


def test_a_long_string_is_refused_with_its_length(tmp_path):
    source = _dense(tmp_path / "long.json", {"v": _one("x" * 1_500_000)})
    with pytest.raises(ImportFormatError, match=r"in video 'v' \(near byte [\d,]+\): a string of 1,500,000 char"):
        list(read_dense_captions(source))


def test_byte_order_marks(tmp_path, capsys):
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps({"v_a": _one("with a BOM")}).encode())
    assert [v.video_id for v in read_dense_captions(bom)] == ["v_a"]
    utf16 = tmp_path / "utf16.json"
    utf16.write_text(json.dumps({"v_a": _one()}), encoding="utf-16")
    with pytest.raises(ImportFormatError, match="is UTF-16 text .* save it as UTF-8"):
        list(read_dense_captions(utf16))
    srt16 = tmp_path / "talk.srt"
    srt16.write_text("1\n00:00:01,000 --> 00:00:03,000\nCafé in UTF-16\n", encoding="utf-16")
    notes = ImportNotes()
    assert [c.text for c in read_subtitles(srt16, notes=notes)] == ["Café in UTF-16"] and not notes
    srt16.write_bytes("1\n00:00:01,000 --> 00:00:03,000\nno BOM\n".encode("utf-16-le"))
    with pytest.raises(ImportFormatError, match="NUL bytes.*--encoding utf-16-le"):
        read_subtitles(srt16)
    assert read_subtitles(srt16, encoding="utf-16-le")[0].text == "no BOM"
    code, out, _, _ = _import(tmp_path, capsys, bom)
    assert code == 0 and "Imported 1 video(s)" in out


def test_values_of_the_wrong_type_are_rejected_per_caption_not_converted(tmp_path, capsys):
    source = tmp_path / "typed.json"
    source.write_text(json.dumps({
        "v_a": {"duration": 30, "title": {"en": "Eggs"}, "timestamps": [[k, k + 1] for k in range(6)],
                "sentences": ["fine", 42, None, ["a", "b"], {"text": "x"}, True]},
        "v_b": {"duration": 30, "timestamps": [[1, 2], [3, 4], [5, 6]],
                "sentences": ["\u200b\u200b", "\x00\x07", " \t "]},
    }), encoding="utf-8")
    code, out, _, memory = _import(tmp_path, capsys, source)
    assert code == 0 and "Imported 1 video(s): 1 captions" in out
    assert "5 caption(s) rejected: the sentence is not text (not imported)" in out
    assert "video v_a, caption 2: the number 42" in out and "caption 3: null" in out
    assert "caption 4: a list ['a', 'b']" in out
    assert "1 video(s) had a title that is not text: the video id is the title (" in out
    assert "3 empty caption(s) dropped" in out
    assert "1 video(s) had no usable caption left: not imported" in out and "video v_b)" in out
    with Memory.open(memory) as m:
        assert m.video_ids() == ["v_a"] and m.manifest.videos["v_a"].title == "v_a"
    assert main(["tool", "get_subgraph", "--memory", str(memory), "--macro-id", "v_a/macro_0000", "--json"]) == 0
    subgraph = capsys.readouterr().out
    assert '"fine"' in subgraph and "42" not in subgraph and "None" not in subgraph


def test_absurd_times_are_rejected_and_a_small_overrun_still_extends(tmp_path):
    source = _dense(tmp_path / "times.json", {"v_a": {
        "duration": 100.0, "timestamps": [[1, 2], [5, 1e301], [1e8, 1e8 + 1], [90, 125], [95, 180]],
        "sentences": ["fine", "huge end", "far future", "a little past", "far past"]}})
    notes = ImportNotes()
    [video] = read_caption_file(source, notes=notes)
    assert [c.text for c in video.captions] == ["fine", "a little past"] and video.duration == 125.0
    rendered = "\n".join(notes.render())
    assert "3 caption(s) rejected: a time beyond 10,000,000 s or far past" in rendered
    assert "caption 2: 5-1e+301 s" in rendered and "caption 5: 95-180 s in a 100 s video" in rendered


def test_a_sentences_string_is_a_malformed_video_not_two_captions(tmp_path):
    source = _dense(tmp_path / "ab.json", {"v": {"timestamps": [[1, 2], [3, 4]], "sentences": "ab"}})
    with pytest.raises(ImportFormatError, match="video 'v' is malformed \\(sentences is text 'ab', not a list\\)"):
        list(read_dense_captions(source))


def test_a_file_with_nothing_usable_is_refused_without_a_memory(tmp_path, capsys):
    source = _dense(tmp_path / "none.json", {"bad id": _one(), "v": _one("\u200b")})
    code, out, err, memory = _import(tmp_path, capsys, source)
    assert code == 1 and "nothing to import" in err and "1 video(s) refused" in out
    assert not memory.exists()
