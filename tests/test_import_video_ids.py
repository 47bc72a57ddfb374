"""Video ids of caption imports: kept as written where they are valid, one rule for subtitle
file names, refused per video (never merged or silently changed), and a bad id leaves no memory."""

from __future__ import annotations

import pytest

from caption_import_support import dense_file as _dense
from caption_import_support import one_caption as _one
from caption_import_support import run_import as _import
from memtools.cli import main
from memtools.store import Memory

SRT_ONE = "1\n00:00:01,000 --> 00:00:03,000\nHello there\n"


def _srt(path, text=SRT_ONE):
    path.write_text(text, encoding="utf-8")
    return path




def _ids(memory):
    with Memory.open(memory) as m:
        return sorted(m.video_ids())


def test_a_youcook2_id_with_a_leading_dash_is_kept_and_answers_from_the_cli(tmp_path, capsys):
    source = _dense(tmp_path / "yc2.json", {"-ErPSunMfcs": _one("crack the eggs"), "_x8Ie0DSYMI": _one("stir")})
    code, out, _, memory = _import(tmp_path, capsys, source)
    assert code == 0 and "Imported 2 video(s)" in out and "Changed or left out" not in out
    assert _ids(memory) == ["-ErPSunMfcs", "_x8Ie0DSYMI"]
    assert main(["tool", "get_summary", "--memory", str(memory), "--video-id", "-ErPSunMfcs"]) == 0
    assert "crack the eggs" in capsys.readouterr().out
    srt = _srt(tmp_path / "talk.srt")
    code, _, _, _ = _import(tmp_path, capsys, srt, extra=("--video-id", "-AbCdEfGh12"))
    assert code == 0 and "-AbCdEfGh12" in _ids(memory)


def test_ids_that_differ_by_spaces_or_characters_are_refused_per_video_never_merged(tmp_path, capsys):
    source = _dense(tmp_path / "caps.json", {"vA": _one("first"), "vA ": _one("second"), "my video": _one("third"),
                                             "my_video": _one("fourth"), "a/../b": _one("fifth")})
    code, out, _, memory = _import(tmp_path, capsys, source, extra=("--batch-size", "1"))
    assert code == 0 and "Imported 2 video(s)" in out
    assert _ids(memory) == ["my_video", "vA"]
    assert "3 video(s) refused: the id is not a valid video id" in out
    assert "'vA ' has leading or trailing whitespace" in out and "'my video' contains ' '" in out
    assert "'a/../b' contains a path separator" in out


def test_a_key_with_an_extension_is_its_own_video_not_a_replacement(tmp_path, capsys):
    six = {"duration": 60.0, "timestamps": [[k, k + 5.0] for k in range(0, 60, 10)], "sentences": list("abcdef")}
    _import(tmp_path, capsys, _dense(tmp_path / "a.json", {"xHr8X2Wpmno": six}))
    code, out, _, memory = _import(tmp_path, capsys, _dense(tmp_path / "b.json", {"xHr8X2Wpmno.mp4": _one()}))
    assert code == 0 and "Replaced" not in out
    assert _ids(memory) == ["xHr8X2Wpmno", "xHr8X2Wpmno.mp4"]
    with Memory.open(memory) as m:
        assert m.manifest.videos["xHr8X2Wpmno"].duration == 60.0


def test_two_sources_with_one_id_are_refused_before_anything_is_written(tmp_path, capsys):
    first = _dense(tmp_path / "a.json", {"v1": _one("one"), "v2": _one("two")})
    second = _dense(tmp_path / "b.json", {"v3": _one("three"), "v1": _one("again")})
    code, _, err, memory = _import(tmp_path, capsys, first, second, extra=("--batch-size", "1"))
    assert code == 1 and "Traceback" not in err
    assert f"two videos would both be stored as 'v1': {first} (key 'v1') and {second} (key 'v1')" in err
    assert not memory.exists()  # the check came before the memory folder
    # subtitle files whose names make one id
    code, _, err, _ = _import(tmp_path, capsys, _srt(tmp_path / "my video.srt"), _srt(tmp_path / "my_video.srt"))
    assert code == 1 and "stored as 'my_video'" in err and "my video.srt (its file name)" in err
    assert not memory.exists()
    # a key twice in one file, into an existing memory: nothing is added
    assert _import(tmp_path, capsys, _dense(tmp_path / "c.json", {"v0": _one()}))[0] == 0
    twice = tmp_path / "twice.json"
    twice.write_text('{"v1": {"timestamps": [[1, 2]], "sentences": ["a"]}, "v2": {"timestamps": [[1, 2]], '
                     '"sentences": ["b"]}, "v1": {"timestamps": [[1, 2]], "sentences": ["c"]}}', encoding="utf-8")
    code, _, err, _ = _import(tmp_path, capsys, twice, extra=("--batch-size", "1"))
    assert code == 1 and "stored as 'v1'" in err and _ids(memory) == ["v0"]


def test_reimporting_a_video_says_it_was_replaced(tmp_path, capsys):
    source = _dense(tmp_path / "a.json", {f"v{i}": _one(f"caption {i}") for i in range(5)})
    assert _import(tmp_path, capsys, source)[0] == 0
    again = _dense(tmp_path / "b.json", {"v0": _one("new"), "v1": _one("new"), "v2": _one("new"),
                                         "v3": _one("new"), "fresh": _one("new")})
    code, out, _, _ = _import(tmp_path, capsys, again)
    assert code == 0 and "Replaced 4 video(s) already in the memory with these captions (v0, v1, v2, ...)" in out


def test_subtitle_ids_come_from_the_file_name_by_one_rule(tmp_path, capsys):
    from memtools.schema import video_id_from_filename

    assert video_id_from_filename("-ErPSunMfcs.srt") == "-ErPSunMfcs"
    assert video_id_from_filename("My Trip (2).srt") == "My_Trip_2"
    assert video_id_from_filename("talk.en.vtt") == "talk.en"
    assert video_id_from_filename("日本.srt") == ""
    code, out, _, memory = _import(tmp_path, capsys, _srt(tmp_path / "-ErPSunMfcs.srt"))
    assert code == 0 and "Changed or left out" not in out and _ids(memory) == ["-ErPSunMfcs"]
    code, out, _, memory = _import(tmp_path, capsys, _srt(tmp_path / "My Trip (2).srt"))
    assert code == 0 and "the id was made from the name" in out and "'My Trip (2).srt' -> My_Trip_2" in out
    code, _, err, _ = _import(tmp_path, capsys, _srt(tmp_path / "日本.srt"))
    assert code == 1 and "pass --video-id" in err


@pytest.mark.parametrize("bad", ["../../etc/passwd", "", " vA", "a b", ".", "x" * 129])
def test_a_bad_video_id_is_one_line_and_leaves_no_memory_folder(tmp_path, capsys, bad):
    srt = _srt(tmp_path / "a.srt")
    with pytest.raises(SystemExit) as done:
        _import(tmp_path, capsys, srt, extra=(f"--video-id={bad}",))
    err = capsys.readouterr().err
    assert done.value.code == 2 and "Traceback" not in err and "ValidationError" not in err
    assert "argument --video-id:" in err and "a video id is 1-128 letters" in err
    assert not (tmp_path / "m").exists()


def test_an_unsupported_file_leaves_no_memory_folder(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("hello", encoding="utf-8")
    code, _, err, memory = _import(tmp_path, capsys, text)
    assert code == 1 and err.count("\n") == 1 and "unsupported caption file" in err
    assert not memory.exists()
