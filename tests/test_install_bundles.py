"""One-step installs: the .mcpb bundle scripts/build-mcpb.py makes, and the console scripts of a built wheel in a
fresh environment (what `uvx memtools serve ...` runs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
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


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    return shared_memory(tmp_path_factory)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return build_bundle(tmp_path_factory.mktemp("dist"))


def test_the_bundle_is_a_zip_with_an_mcpb_manifest(bundle):
    assert bundle.suffix == ".mcpb"
    with zipfile.ZipFile(bundle) as z:
        manifest = json.loads(z.read("manifest.json"))
        names = z.namelist()
    for field in ("manifest_version", "name", "version", "description", "author", "server"):
        assert manifest[field], field
    assert f'__version__ = "{manifest["version"]}"' in (ROOT / "src/memtools/version.py").read_text()
    server = manifest["server"]
    assert server["type"] == "uv" and server["entry_point"] in names and "pyproject.toml" in names  # manifest 0.4
    assert server["mcp_config"]["args"][:5] == ["run", "--quiet", "--directory", "${__dirname}", server["entry_point"]]
    memory = manifest["user_config"]["memory"]
    assert memory["type"] == "directory" and memory["required"] is True
    used = {a.split("user_config.")[1].rstrip("}") for a in server["mcp_config"]["args"] if "user_config." in a}
    assert used <= set(manifest["user_config"])  # every ${user_config.X} it names is declared


def _substitute(value: str, folder: Path, config: dict[str, str]) -> str:
    value = value.replace("${__dirname}", str(folder))
    for key, given in config.items():
        value = value.replace("${user_config." + key + "}", given)
    return value


async def test_the_unpacked_bundle_starts_the_server_it_names(bundle, memory, tmp_path):
    folder = tmp_path / "unpacked"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    config = {key: "" for key in manifest["user_config"]} | {"memory": str(memory)}  # as Claude Desktop fills it
    mcp = manifest["server"]["mcp_config"]
    assert mcp["command"] == "uv"
    args = [_substitute(a, folder, config) for a in mcp["args"]]
    entry = args.index(manifest["server"]["entry_point"])  # uv run --directory BUNDLE ENTRY OPTIONS (uv's venv: the
    args = [str(folder / args[entry]), *args[entry + 1:]]  # release check); this Python and checkout stand for it
    env = {**os.environ, **{k: _substitute(v, folder, config) for k, v in mcp.get("env", {}).items()},
           "PYTHONPATH": SRC}  # this checkout's memtools stands for the installed one
    async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "search_nodes" in names and "add_video" not in names  # no video folder given: read-only
        found = await client.call_tool("search_nodes", {"query": "the pan catches fire", "top_k": 2})
        assert not found.is_error and "kitchen/" in found.content[0].text


@pytest.mark.slow
async def test_console_scripts_of_the_built_wheel_work_in_a_fresh_environment(tmp_path, memory):
    """What `uvx memtools serve ...` does: the wheel installed alone in a new environment (dependencies from the
    package registry), its console scripts run with nothing of the checkout on the path."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheels), str(ROOT)], check=True, cwd=tmp_path)
    wheel = next(wheels.glob("memtools-*.whl"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    uvx = shutil.which("uvx")  # in memtools[dev], so CI runs this branch
    if uvx:
        run = [uvx, "--from", str(wheel)]
        prefix_mcp, prefix_cli = [*run, "memtools-mcp"], [*run, "memtools"]
    else:
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True, env=env)
        prefix_mcp, prefix_cli = [str(venv / "bin" / "memtools-mcp")], [str(venv / "bin" / "memtools")]
    helped = subprocess.run([*prefix_cli, "serve", "--help"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert helped.returncode == 0 and "--allow-root" in helped.stdout
    version = subprocess.run([*prefix_mcp, "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert version.returncode == 0 and "memtools-mcp" in version.stdout
    params = StdioServerParameters(command=prefix_mcp[0], args=[*prefix_mcp[1:], "--memory", str(memory)], env=env,
                                   cwd=str(tmp_path))
    async with Client(params) as client:
        found = await client.call_tool("search_nodes", {"query": "the pan catches fire", "top_k": 2})
        assert not found.is_error and "kitchen/" in found.content[0].text
