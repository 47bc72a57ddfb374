"""Many memories behind one server (``memtools serve --memories DIR --tokens-file F``), over real HTTP.

Two memories (``alphamem`` holds the video ``alphacam``, ``bravomem`` the video ``bravocam``) and tokens that
name them: Alice may write alphamem, Bob may read bravomem (his token given in the file by its SHA-256),
Carol may write alphamem and read bravomem. Every answer a token gets (tools, resources, templates,
completions, the prompt, pages and errors) is searched for the other memory's name and video: 0 leaks;
and every refusal for the other memory is the same bytes as for a memory that does not exist, once the
name asked is put back.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcp_support import VALID_CALLS, console_script, free_port, make_memory

ALICE, BOB, CAROL = "a" * 40, "b" * 40, "c" * 40
A, B, NOBODY = "alphamem", "bravomem", "zulumem"
VIDEO = {A: "alphacam", B: "bravocam"}
WRITE_CALL = {"add_note": {"about": "alphacam@125", "text": "the cook is called Tom"}}
HEADERS = {"Accept": "application/json, text/event-stream"}
TEMPLATE = "memtools://{memory}/videos/{video_id}/summary"


@contextlib.contextmanager
def many_server(folder: Path, tokens: Path, env: dict[str, str], token: str) -> Iterator[str]:
    """``memtools serve --memories DIR --http ...`` in a subprocess; yields its base URL; always stops it."""
    port = free_port()
    script = console_script("memtools")
    cmd = [script] if script else [sys.executable, "-c", "import sys; from memtools.cli import main; sys.exit(main())"]
    cmd += ["serve", "--memories", str(folder), "--http", "--port", str(port), "--tokens-file", str(tokens),
            "--allow-writes", "--audit-reads"]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, **env})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"memtools serve exited with {proc.returncode}: {log.read().decode()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/health", timeout=1.0,
                             headers={"Authorization": f"Bearer {token}"}).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("many")
    folder = root / "memories"
    folder.mkdir()
    for name in (A, B):
        make_memory(root / name, (VIDEO[name],)).rename(folder / name)
    tokens = root / "tokens.json"
    tokens.write_text(json.dumps({
        "ALICE_TOKEN": [f"memtools:write:{A}"],
        "sha256:" + hashlib.sha256(BOB.encode()).hexdigest(): [f"memtools:read:{B}"],
        "CAROL_TOKEN": [f"memtools:write:{A}", f"memtools:read:{B}"]}))
    with many_server(folder, tokens, {"ALICE_TOKEN": ALICE, "CAROL_TOKEN": CAROL}, ALICE) as base:
        yield base, folder


def rpc(base: str, token: str, method: str, params: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    return httpx.post(base + "/mcp", json=body, timeout=60, headers={**HEADERS, "Authorization": f"Bearer {token}"})


def result(base: str, token: str, method: str, params: dict) -> dict:
    answer = rpc(base, token, method, params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def calls_for(name: str) -> dict[str, dict]:
    """One valid call per read tool, against the memory ``name``'s video."""
    text = json.dumps(VALID_CALLS).replace("kitchen", VIDEO[name])
    return {tool: {"memory": name, **args} for tool, args in json.loads(text).items()}


def assert_no_leak(text: str, other: str) -> None:
    assert other not in text and VIDEO[other] not in text, text[:2000]


def same_as_unknown(base: str, token: str, method: str, params: dict, other: str) -> str:
    """The answer to ``params`` naming ``other`` is the answer naming a memory that does not exist."""
    hidden = rpc(base, token, method, params).text
    made_up = json.loads(json.dumps(params).replace(other, NOBODY))
    unknown = rpc(base, token, method, made_up).text
    assert hidden.replace(other, NOBODY) == unknown, (hidden, unknown)
    return hidden


@pytest.mark.parametrize(("token", "mine", "other"), [(ALICE, A, B), (BOB, B, A)])
def test_tools_read_only_the_callers_memory(served, token, mine, other):
    base, _ = served
    listed = result(base, token, "tools/list", {})
    assert_no_leak(json.dumps(listed), other)
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    assert "list_memories" in tools and all("memory" in t["inputSchema"]["required"] for n, t in tools.items()
                                             if n != "list_memories")
    assert ("add_note" in tools) is (token == ALICE)  # Bob may only read
    memories = result(base, token, "tools/call", {"name": "list_memories", "arguments": {}})
    assert memories["result"]["structuredContent"]["memories"] == [{"name": mine, "may_write": token == ALICE}]
    for tool, arguments in calls_for(mine).items():
        answer = result(base, token, "tools/call", {"name": tool, "arguments": arguments})
        assert not answer["result"].get("isError"), (tool, answer)
        assert_no_leak(json.dumps(answer), other)
    for tool, arguments in {**calls_for(other), **WRITE_CALL}.items():
        params = {"name": tool, "arguments": {**arguments, "memory": other}}
        refused = json.loads(same_as_unknown(base, token, "tools/call", params, other))
        assert refused["result"]["isError"] and f"unknown memory '{other}'" in refused["result"]["content"][0]["text"]
    unnamed = result(base, token, "tools/call", {"name": "search_nodes", "arguments": {"query": "pan"}})
    assert unnamed["result"]["isError"] and "list_memories" in unnamed["result"]["content"][0]["text"]


@pytest.mark.parametrize(("token", "mine", "other"), [(ALICE, A, B), (BOB, B, A)])
def test_resources_completions_and_prompt(served, token, mine, other):
    base, _ = served
    listed = result(base, token, "resources/list", {})
    uris = {r["uri"] for r in listed["result"]["resources"]}
    assert {"memtools://memories", f"memtools://{mine}/videos", f"memtools://{mine}/videos/{VIDEO[mine]}/summary"} \
        <= uris
    templates = result(base, token, "resources/templates/list", {})
    assert TEMPLATE in {t["uriTemplate"] for t in templates["result"]["resourceTemplates"]}
    kf = f"memtools://{mine}/videos/{VIDEO[mine]}/keyframes/kf_0001"
    reads = ["memtools://memories", f"memtools://{mine}/videos", f"memtools://{mine}/videos/{VIDEO[mine]}/summary",
             kf, f"memtools://{mine}/videos/{VIDEO[mine]}/frames/30.000"]
    answers = [listed, templates] + [result(base, token, "resources/read", {"uri": uri}) for uri in reads]
    assert all("result" in a for a in answers[2:]), answers
    assert json.loads(answers[2]["result"]["contents"][0]["text"]) == {"memories": [mine]}
    for uri in [u.replace(mine, other).replace(VIDEO[mine], VIDEO[other]) for u in reads[1:]]:
        refused = json.loads(same_as_unknown(base, token, "resources/read", {"uri": uri}, other))
        assert refused["error"]["message"].startswith("Unknown resource"), refused
    ref = {"type": "ref/resource", "uri": TEMPLATE}
    names = result(base, token, "completion/complete", {"ref": ref, "argument": {"name": "memory", "value": ""}})
    assert names["result"]["completion"]["values"] == [mine]
    answers.append(names)
    ids = result(base, token, "completion/complete", {"ref": ref, "argument": {"name": "video_id", "value": ""},
                                                       "context": {"arguments": {"memory": mine}}})
    assert ids["result"]["completion"]["values"] == [VIDEO[mine]]
    answers.append(ids)
    same_as_unknown(base, token, "completion/complete", {
        "ref": ref, "argument": {"name": "video_id", "value": ""}, "context": {"arguments": {"memory": other}}}, other)
    prompt_ref = {"type": "ref/prompt", "name": "answer_video_question"}
    for argument in ("question", "video_id", "memory"):
        answers.append(result(base, token, "completion/complete", {
            "ref": prompt_ref, "argument": {"name": argument, "value": ""}, "context": {"arguments": {}}}))
    prompt = result(base, token, "prompts/get", {"name": "answer_video_question",
                                                 "arguments": {"question": "Who cooks?", "memory": mine}})
    assert f"memory='{mine}'" in prompt["result"]["messages"][0]["content"]["text"]
    answers += [prompt, result(base, token, "prompts/list", {})]
    refused = json.loads(same_as_unknown(base, token, "prompts/get", {
        "name": "answer_video_question", "arguments": {"question": "Who cooks?", "memory": other}}, other))
    assert "unknown memory" in refused["error"]["message"]
    for answer in answers:
        assert_no_leak(json.dumps(answer), other)


@pytest.mark.parametrize(("token", "mine", "other"), [(ALICE, A, B), (BOB, B, A)])
def test_pages_show_only_the_callers_memory(served, token, mine, other):
    base, folder = served
    auth = {"Authorization": f"Bearer {token}"}
    home = httpx.get(base + "/", headers=auth)
    assert home.status_code == 200 and f'href="m/{mine}/"' in home.text
    assert_no_leak(home.text, other)
    assert httpx.get(base + "/", headers={"Authorization": "Bearer " + "x" * 40}).status_code == 401

    def routes(name: str) -> list[str]:
        vid = VIDEO[name]
        frame = sorted((folder / name / "frames" / vid).glob("*.jpg"))[0].name
        return [f"/m/{name}/", f"/m/{name}/index.html", f"/m/{name}/video-{vid}.html", f"/m/{name}/timeline-{vid}.png",
                f"/m/{name}/frames/{vid}/{frame}"]

    for path in routes(mine):
        page = httpx.get(base + path, headers=auth)
        assert page.status_code == 200, (path, page.text[:200])
        assert_no_leak(page.content.decode("latin-1"), other)
    for path in routes(other):
        hidden = httpx.get(base + path, headers=auth)
        unknown = httpx.get(base + path.replace(other, NOBODY), headers=auth)
        assert hidden.status_code == unknown.status_code == 404, path
        assert hidden.content == unknown.content, path
        assert {k: v for k, v in hidden.headers.items() if k != "date"} == \
            {k: v for k, v in unknown.headers.items() if k != "date"}, path
    bare = httpx.get(base + f"/m/{other}", headers=auth, follow_redirects=False)
    assert bare.status_code == 307 and bare.headers["location"] == f"/m/{other}/"  # the same for every name


def test_a_write_token_writes_only_its_memory(served):
    base, folder = served
    note = {"name": "add_note", "arguments": {**WRITE_CALL["add_note"], "memory": A}}
    written = result(base, ALICE, "tools/call", note)
    assert not written["result"].get("isError") and written["result"]["structuredContent"]["change_id"] == "c0001"
    b_note = {"about": "bravocam@125", "text": "the cook is called Tom", "memory": B}
    for token in (CAROL, BOB):  # Carol reads B and writes A; Bob reads B: neither writes B
        refused = result(base, token, "tools/call", {"name": "add_note", "arguments": b_note})
        assert refused["result"]["isError"] and refused["result"]["_meta"]["memtools/errorKind"] == "forbidden"
    refused = result(base, BOB, "tools/call", note)  # Bob cannot see A at all
    assert "unknown memory 'alphamem'" in refused["result"]["content"][0]["text"]
    log = result(base, CAROL, "tools/call", {"name": "list_changes", "arguments": {"memory": B}})
    assert "No changes" in log["result"]["content"][0]["text"] or "c0001" not in log["result"]["content"][0]["text"]
    changes = result(base, CAROL, "tools/call", {"name": "list_changes", "arguments": {"memory": A}})
    assert "ALICE_TOKEN" in changes["result"]["content"][0]["text"]  # each memory keeps its own change log


def test_reads_are_audited_per_memory(served):
    base, folder = served
    result(base, BOB, "tools/call", {"name": "get_summary", "arguments": {"memory": B, "video_id": "bravocam"}})
    lines = {name: [json.loads(x) for x in (folder / name / "reads.jsonl").read_text().splitlines()]
             for name in (A, B)}
    assert {r["caller"] for r in lines[B]} <= {"CAROL_TOKEN", "sha256:" + hashlib.sha256(BOB.encode()).hexdigest()[:12]}
    assert {r["caller"] for r in lines[A]} <= {"ALICE_TOKEN", "CAROL_TOKEN"}
    summary = [r for r in lines[B] if r["tool"] == "get_summary"][-1]
    assert summary["arguments"] == {"video_id": "bravocam"} and "bravocam/super_01" in summary["node_ids"]
    assert_no_leak(json.dumps(lines[A]), B)
