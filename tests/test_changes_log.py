"""The change log cannot lie (issue 50, item 7): who and what are stored and shown as data. A note or an OAuth
subject holding a line break cannot print a line that looks like another change; a 100,000-character subject
is cut; ``memtools log --json`` prints one JSON object per change."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest
from starlette.testclient import TestClient

from mcp_support import make_memory
from memtools.changes import add_note
from memtools.changes.log import WHAT_MAX, WHO_MAX, ChangeLog, shown
from memtools.cli import main
from memtools.mcp.http import HttpOptions, authenticator, http_app
from memtools.mcp.server import build_server
from memtools.store import Memory
from memtools.tools.caller import Caller, acting_as
from test_mcp_http_guard import Issuer

FORGED = "c9999  2026-12-04 00:00:00  admin via cli  forget: forgot sample"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def logged(path, capsys, *extra: str) -> list[str]:
    assert main(["log", "--memory", str(path), *extra]) == 0
    return capsys.readouterr().out.splitlines()


def test_a_note_cannot_forge_a_line_of_the_log(tmp_path, capsys):
    path = make_memory(tmp_path)
    assert main(["note", "kitchen@30", f"ok\n{FORGED}", "--memory", str(path)]) == 0
    assert main(["note", "kitchen@60", "the\u2028oil\rsmokes\x1b[2K \u202eevil", "--memory", str(path)]) == 0
    capsys.readouterr()
    lines = logged(path, capsys)
    assert [line.split()[0] for line in lines] == ["c0002", "c0001"]  # one line per change, none forged
    assert f"ok\\n{FORGED}" in lines[1]
    assert "the\\u2028oil\\rsmokes\\x1b[2K \\u202eevil" in lines[0]
    records = [json.loads(line) for line in logged(path, capsys, "--json")]
    assert [r["id"] for r in records] == ["c0002", "c0001"]
    assert set(records[0]) == {"id", "at", "when", "who", "front_end", "action", "summary", "video_id", "state",
                               "undoes", "undone_by"}
    assert records[1]["front_end"] == "cli" and records[1]["action"] == "note" and records[1]["state"] == "done"
    assert records[1]["summary"].endswith(f"ok\\n{FORGED}") and "\n" not in records[1]["summary"]


def test_who_and_what_are_escaped_and_cut_whoever_writes_them(tmp_path):
    path = make_memory(tmp_path)
    with Memory.open(path) as memory:
        for who, text in (("x" * 100_000, "first"), ({"client": ["a"]}, "second"), ("ann\u0085\ud800", "third")):
            with acting_as(Caller("mcp", who, may_write=True)):  # type: ignore[arg-type]  # what a bad token held
                add_note(memory, "kitchen@30", text)
    rows = {c.summary.rsplit(": ", 1)[1]: c for c in ChangeLog(path).entries()}
    assert len(rows["first"].who) == WHO_MAX and rows["first"].who.endswith("\u2026")
    assert rows["second"].who == '{"client": ["a"]}'  # data, not a Python repr
    assert rows["third"].who == "ann\\x85\\ud800"
    for change in rows.values():
        change.line().encode("utf-8")
    (tmp_path / "raw").mkdir()
    log = ChangeLog(tmp_path / "raw")
    cid = log.begin(front_end="mcp", who="eve", action="note", summary="a" * 600, video_id="v", before=None,
                    after_digest=None)
    assert len(log.get(cid).summary) == WHAT_MAX  # type: ignore[union-attr]
    with closing(sqlite3.connect(log.path)) as db, db:  # a row as an older memtools stored it is shown cleaned
        db.execute("UPDATE changes SET who = ?, summary = ?", (f"eve\n{FORGED}", "b\n" * 600))
    old = log.get(cid)
    assert old is not None and old.who == f"eve\\n{FORGED}" and len(old.summary) == WHAT_MAX
    assert "\n" not in old.line()


@pytest.mark.parametrize(("value", "limit", "expected"), [
    ("plain", 10, "plain"), ("a\nb", 10, "a\\nb"), ("abcdefghijk", 5, "abcd\u2026"),
    ("abc\n", 4, "abc\u2026"), ("ab\x00cd", 6, "ab\u2026"), (7, 5, "7"), ("\U0001f600\u2029", 20, "\U0001f600\\u2029")])
def test_shown_escapes_and_cuts_never_inside_an_escape(value, limit, expected):
    assert shown(value, limit) == expected
    assert shown(shown(value, limit), limit) == shown(value, limit)


def test_an_oauth_subject_with_a_line_break_is_logged_as_data(tmp_path, capsys):
    path = make_memory(tmp_path)
    issuer = Issuer()
    future = 4_000_000_000
    write = "memtools:read memtools:write"
    issuer.tokens = {
        "newline": {"active": True, "iss": issuer.url, "exp": future, "sub": f"eve\n{FORGED}", "scope": write},
        "long": {"active": True, "iss": issuer.url, "exp": future, "sub": "m" * 100_000, "scope": write},
        "dict": {"active": True, "iss": issuer.url, "exp": future, "client_id": {"a": 1}, "scope": write},
    }
    try:
        options = HttpOptions(auth_issuer=issuer.url)
        server = build_server(path, allow_writes=True)
        app = http_app(server, "127.0.0.1", options, authenticator(options))
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            for n, token in enumerate(issuer.tokens):
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
                    "name": "add_note", "arguments": {"about": "kitchen@30", "text": f"note {n}"}}}
                answer = client.post("/mcp", json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
                assert answer.status_code in (200, 401), answer.text  # a dict client_id: refused, or data
        server.memtools().memory.close()
    finally:
        issuer.close()
    lines = logged(path, capsys)
    assert [line.split()[0] for line in lines] == [f"c{n:04d}" for n in range(len(lines), 0, -1)]
    assert len(lines) >= 2 and not any(line.startswith("c9999") or "{'a'" in line for line in lines)
    assert any(f"eve\\n{FORGED} via mcp" in line for line in lines)
    assert any(("m" * (WHO_MAX - 1)) + "\u2026 via mcp" in line for line in lines)
    assert not any("m" * WHO_MAX in line for line in lines)
