"""Listed where users look: server.json for the MCP Registry, the README's ``mcp-name:`` marker the registry reads on
PyPI's page, and the Claude Desktop bundle at manifest 0.4 with the ``uv`` server type.

server.json is checked here field by field and by running the command line it tells registry clients to run; its
validation against the registry's official JSON schema (2025-12-11, fetched from PyPI) is in scripts/check-release.sh,
as is the official mcpb CLI's validation of the bundle and its start with uv.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path

import pytest
from mcp import StdioServerParameters

import memtools
from bundle_support import build_bundle
from mcp_support import Client, shared_memory

ROOT = Path(__file__).resolve().parents[1]
SRC = str(Path(memtools.__file__).resolve().parents[1])
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def _server() -> dict:
    return json.loads((ROOT / "server.json").read_text(encoding="utf-8"))


def _version() -> str:
    found = re.search(r'__version__ = "([^"]+)"', (ROOT / "src/memtools/version.py").read_text(encoding="utf-8"))
    assert found is not None
    return found[1]


def _command_line(package: dict, memory: Path) -> list[str]:
    """The arguments a registry client puts after the package's executable: positional values as they are, named
    ones with the value the user gave (only ``--memory`` is asked for)."""
    args: list[str] = []
    for argument in package["packageArguments"]:
        if argument["type"] == "positional":
            args.append(argument["value"])
        else:
            assert argument["name"] == "--memory", argument
            args += [argument["name"], str(memory)]
    return args


def test_server_json_is_a_registry_entry_for_this_version_of_the_pypi_package():
    server = _server()
    assert server["$schema"] == SCHEMA
    assert re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/memtools", server["name"])  # GitHub-verified namespace
    assert 1 <= len(server["description"]) <= 100 and 1 <= len(server["title"]) <= 100  # the schema's limits
    [package] = server["packages"]
    assert package["registryType"] == "pypi" and package["registryBaseUrl"] == "https://pypi.org"
    assert package["identifier"] == "memtools"  # pyproject's [project] name
    assert 'name = "memtools"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert server["version"] == package["version"] == _version()  # a release bumps all three with version.py
    assert package["transport"] == {"type": "stdio"} and package["runtimeHint"] == "uvx"


def test_the_readme_carries_the_mcp_name_the_registry_looks_for_on_pypi():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    names = re.findall(r"mcp-name:\s*(\S+)", readme)
    assert names == [_server()["name"]]  # exactly one marker, the entry's name
    head = readme.split("\n## ", 1)[0]
    assert f"<!-- mcp-name: {_server()['name']} -->" in head  # near the top, hidden on rendered pages


async def test_the_command_line_server_json_gives_serves_the_memory(tmp_path_factory):
    """What a registry client runs (``uvx memtools serve --memory DIR``): this checkout's ``memtools`` console with
    the entry's arguments serves the memory's tools over stdio."""
    memory = shared_memory(tmp_path_factory)
    [package] = _server()["packages"]
    entry = f"import sys; sys.path.insert(0, {SRC!r}); from memtools.cli import console; console()"
    params = StdioServerParameters(command=sys.executable, args=["-c", entry, *_command_line(package, memory)])
    async with Client(params) as client:
        found = await client.call_tool("search_nodes", {"query": "the pan catches fire", "top_k": 2})
        assert not found.is_error and "kitchen/" in found.content[0].text


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return build_bundle(tmp_path_factory.mktemp("dist"))


def test_the_bundle_is_manifest_0_4_with_the_uv_server_type_and_its_project(bundle):
    with zipfile.ZipFile(bundle) as z:
        manifest = json.loads(z.read("manifest.json"))
        project = z.read("pyproject.toml").decode()
        names = z.namelist()
    assert manifest["manifest_version"] == "0.4"
    server = manifest["server"]
    assert server["type"] == "uv" and server["entry_point"] == "server/main.py"
    assert server["mcp_config"]["command"] == "uv"
    assert server["mcp_config"]["args"][:5] == ["run", "--quiet", "--directory", "${__dirname}", "server/main.py"]
    assert not any(n.startswith(("server/lib/", "server/venv/")) for n in names)  # the uv type installs, never bundles
    wheel = f"memtools-{_version()}-py3-none-any.whl"
    assert f"server/{wheel}" in names
    assert f'dependencies = ["memtools=={_version()}"]' in project  # uv installs memtools from the bundled wheel
    assert f'memtools = {{ path = "server/{wheel}" }}' in project and "package = false" in project
