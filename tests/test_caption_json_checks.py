"""Dense-caption JSON that a parser would read without a word but wrongly: a key twice in one object
(last wins), a lone UTF-16 surrogate (``?``, or a character never written), a key beside "database".
Each is refused naming the video and where, and an import that refuses a file writes nothing."""

from __future__ import annotations

import json
import types

import pytest

from memtools.cli import main
from memtools.errors import ImportFormatError
from memtools.importers import dense_captions
from memtools.importers.dense_captions import BUF_SIZE, read_dense_captions
from memtools.store import Memory

GOOD = '"a": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["fine"]}'


@pytest.fixture(params=["yajl2_c", "python"], autouse=True)
def backend(request, monkeypatch):
    """Both of ijson's parsers: the C one memtools uses, and the Python one it falls back to."""
    import ijson

    try:
        parser = ijson.get_backend(request.param)
    except Exception:  # noqa: BLE001 - not built here
        pytest.skip(f"ijson's {request.param} backend is not installed")
    monkeypatch.setattr(dense_captions, "_ijson", lambda: types.SimpleNamespace(
        basic_parse=parser.basic_parse, JSONError=ijson.JSONError))
    return request.param


def _read(tmp_path, text: str | bytes):
    path = tmp_path / "caps.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return [(v.video_id, v.duration, v.title, [c.text for c in v.captions]) for v in read_dense_captions(path)]


@pytest.mark.parametrize("video, says", [
    ('"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["x"], "sentences": ["y"]}',
     "the key 'sentences' appears twice"),
    ('"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["x"], "duration": 90}',
     "the key 'duration' appears twice"),
    ('"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["x"], "extra": [{"k": 1, "k": 2}]}',
     r"the key 'k' \(inside extra\[0\]\) appears twice"),
])
def test_a_key_twice_in_a_video_is_refused_naming_the_video_and_the_key(tmp_path, video, says):
    with pytest.raises(ImportFormatError, match=rf"caps.json is refused in video 'b' \(near byte \d+\): {says}; JSON "
                                                "readers keep one of the two without a word"):
        _read(tmp_path, "{" + GOOD + ",\n " + video + "}")


@pytest.mark.parametrize("video, field, escape, column", [
    ('"b": {"duration": 9, "timestamps": [[1, 2], [3, 4]],\n  "sentences": ["x", "a\\ud800b"]}',
     "the field sentences[1]", "\\ud800", 24),
    ('"b": {"duration": 9, "timestamps": [[1, 2]],\n  "sentences": ["\\udc00 alone"]}',
     "the field sentences[0]", "\\udc00", 18),
    ('"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["s"],\n  "title": "x\\ud800\\u0041"}',
     "the field title", "\\ud800", 14),
    ('"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["s"],\n  "\\uDBFF": 1}',
     "a key", "\\uDBFF", 4),
])
def test_a_lone_surrogate_is_refused_naming_the_video_the_field_and_the_place(tmp_path, video, field, escape, column):
    with pytest.raises(ImportFormatError) as refused:
        _read(tmp_path, "{" + GOOD + ",\n " + video + "}")
    text = str(refused.value)
    assert f"caps.json is refused in video 'b', {field} (line 3, column {column}; byte " in text
    assert f"{escape} is half of a UTF-16 surrogate pair, alone" in text


def test_whole_pairs_and_escaped_backslashes_read_as_written(tmp_path):
    text = json.dumps({"b": {"duration": 9, "timestamps": [[1, 2], [3, 4]],
                             "sentences": ["\U0001f600 fine", "\\ud800 is text here, \\\U0001f600 too"]}})
    assert "\\ud83d\\ude00" in text and "\\\\ud800" in text  # json.dumps escapes both
    assert _read(tmp_path, text) == [("b", 9.0, "b", ["\U0001f600 fine", "\\ud800 is text here, \\\U0001f600 too"])]


@pytest.mark.parametrize("shift", range(14))
def test_pairs_and_lone_halves_across_read_buffers(tmp_path, shift):
    """The bytes are checked a buffer at a time: a pair cut by a buffer's end is still a pair, a lone half
    is still found, wherever the cut falls."""
    pad = "x" * (BUF_SIZE - 60 + shift)
    pair = json.dumps({"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": [pad + "\U0001f600\U0001f600"]}})
    assert _read(tmp_path, pair)[0][3] == [pad + "\U0001f600\U0001f600"]
    lone = pair.replace("\\ude00\\ud83d", "\\u0041\\ud83d")  # the first pair loses its low half
    with pytest.raises(ImportFormatError, match=r"in video 'b', the field sentences\[0\] \(line 1, column [\d,]+; "
                                                r"byte [\d,]+\): \\ud83d is half"):
        _read(tmp_path, lone)


def test_encoded_surrogate_bytes_are_not_utf8_not_a_number(tmp_path):
    with pytest.raises(ImportFormatError) as refused:
        _read(tmp_path, b'{"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["\xed\xa0\x80"]}}')
    text = str(refused.value)  # the C parser's decoding error was called "a number cannot be read"
    assert "in video 'b'" in text and "a number" not in text
    assert "a string holds bytes that are not UTF-8" in text or "codec can't decode" in text


def test_a_key_beside_database_is_refused_not_dropped(tmp_path):
    with pytest.raises(ImportFormatError, match="after video 'a' .*: the key 'b' sits beside \"database\""):
        _read(tmp_path, '{"database": {' + GOOD + '}, "b": {"duration": 9, "timestamps": [[1, 2]], '
                        '"sentences": ["x"]}}')


@pytest.mark.parametrize("bad, says", [
    ('"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["x"], "sentences": ["y"]}', "appears twice"),
    ('"b": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["x\\ud800"]}', "half of a UTF-16 surrogate pair"),
])
def test_an_import_that_refuses_a_file_writes_nothing(tmp_path, capsys, bad, says, backend):
    if backend != "yajl2_c":
        pytest.skip("the CLI test runs once")
    memory = tmp_path / "m"
    first = tmp_path / "first.json"
    first.write_text('{"c": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["kept"]}}')
    assert main(["import-captions", str(first), "--memory", str(memory), "--embedder", "test:32"]) == 0
    good, broken = tmp_path / "good.json", tmp_path / "broken.json"
    good.write_text('{"d": {"duration": 9, "timestamps": [[1, 2]], "sentences": ["fine"]}}')
    broken.write_text("{" + GOOD + ",\n " + bad + "}")
    capsys.readouterr()
    assert main(["import-captions", str(good), str(broken), "--memory", str(memory), "--embedder", "test:32"]) == 1
    err = capsys.readouterr().err
    assert "broken.json is refused in video 'b'" in err and says in err and "Traceback" not in err
    with Memory.open(memory) as m:
        assert m.video_ids() == ["c"]  # neither the good file's video nor the broken file's first one
