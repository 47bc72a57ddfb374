"""The direction of imports: import-linter's contracts (``[tool.importlinter]`` in pyproject.toml)
hold on the source, and docs/architecture.md draws exactly the layers they name."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import grimp
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}


def _drawn_layers(heading: str) -> list[str]:
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    section = text.split(f"## {heading}", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block, f"docs/architecture.md: no layer drawing under '{heading}'"
    return [line.strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_contracts_hold():
    done = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                           "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_import_graph_sees_lazy_and_type_checking_imports():
    graph = grimp.build_graph("memtools", cache_dir=None)
    # imported inside run(): a lazy import ties the two as much as one at the top
    assert graph.direct_import_exists(importer="memtools.cli.serve", imported="memtools.mcp",
                                      as_packages=True)
    # only under `if TYPE_CHECKING:` there, and still an edge: a circle through it is a circle
    assert graph.direct_import_exists(importer="memtools.builder.bundle_vectors", imported="memtools.store.memory")


def test_the_architecture_page_draws_the_contracted_layers():
    contracts = _contracts()
    assert _drawn_layers("Packages") == contracts["packages"]["layers"]
    assert _drawn_layers("Inside `memtools.store`") == contracts["store"]["layers"]


def test_every_package_and_store_part_has_a_layer():
    """A new package (or store part) must be placed in the drawing, not slip past the contract."""
    def named(layers: list[str]) -> set[str]:
        return {n.strip() for layer in layers for n in re.split(r"[|:]", layer)}

    contracts = _contracts()
    src = ROOT / "src/memtools"
    aliases = {"build"}  # deprecated, resolved when first used
    packages = {p.stem for p in src.iterdir() if (p.suffix == ".py" and p.stem != "__init__")
                or (p / "__init__.py").is_file()} - aliases - {"__main__"}
    assert packages == named(contracts["packages"]["layers"])
    store = {p.stem for p in (src / "store").iterdir() if (p.suffix == ".py" and p.stem != "__init__")
             or (p / "__init__.py").is_file()}
    assert store == named(contracts["store"]["layers"])


def test_the_old_pipeline_name_still_imports_with_a_warning():
    for name in [m for m in sys.modules if m == "memtools.build" or m.startswith("memtools.build.")]:
        del sys.modules[name]
    with pytest.warns(DeprecationWarning, match="memtools.builder"):
        import memtools.build as old
    import memtools.builder
    import memtools.builder.config
    from memtools.build.config import BuildConfig

    assert old is memtools.builder
    assert BuildConfig is memtools.builder.config.BuildConfig  # the same class, not a second copy
    assert sys.modules["memtools.build.config"] is memtools.builder.config


def test_the_old_memdreamer_importer_name_still_imports_with_a_warning():
    import memtools.importers.memdreamer as old
    from memtools.memdreamer import import_memdreamer

    with pytest.warns(DeprecationWarning, match="memtools.memdreamer"):
        assert old.import_memdreamer is import_memdreamer
    with warnings.catch_warnings(), pytest.raises(AttributeError):
        old.nothing_here  # noqa: B018


def test_no_module_is_over_400_lines():
    """Small modules, named for what they do (STYLE.md): past 400 lines a module holds two things."""
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "src").rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}, f"split these by concept: {long}"
