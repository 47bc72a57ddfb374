"""The voice encoder's weights: Resemblyzer's ``pretrained.pt`` read into numpy, without torch.

    path = weights_path()                 # $MEMTOOLS_VOICE_WEIGHTS, else the installed resemblyzer's file
    tensors = read_torch_checkpoint(path)["model_state"]     # {"lstm.weight_ih_l0": ndarray, ...}

Resemblyzer (Apache-2.0) ships its GE2E speaker encoder as ``resemblyzer/pretrained.pt`` in its
wheel. Its dependencies would bring torch, so memtools does not depend on it: install the wheel
alone (``pip install --no-deps resemblyzer``, 17 MB, pure Python) and memtools finds the file
without importing the package (importing it would import torch).

The file is torch's legacy (pre-1.6) serialisation: five pickles in a row (magic number,
protocol version, system info, the object with tensors as persistent ids, the storage keys),
then each storage's bytes, each preceded by its element count. The unpickler below only builds
the classes that format uses (an ``OrderedDict``, float storages, tensors); any other class in
the file is refused, so a tampered file cannot run code. Torch's newer zip format is read too.
"""

from __future__ import annotations

import collections
import importlib.util
import io
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from memtools.errors import ConfigError

WEIGHTS_ENV = "MEMTOOLS_VOICE_WEIGHTS"
INSTALL_HINT = ("speaker recognition needs the voice encoder's weights: pip install --no-deps resemblyzer "
                f"(the 17 MB wheel ships them; torch is not needed), or set ${WEIGHTS_ENV} to a pretrained.pt file")
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
           "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8,
           "ByteStorage": np.uint8, "BoolStorage": np.bool_}


def weights_path() -> Path | None:
    """The ``pretrained.pt`` to use: ``$MEMTOOLS_VOICE_WEIGHTS``, else the installed resemblyzer's; None if neither."""
    given = os.environ.get(WEIGHTS_ENV)
    if given:
        return Path(given)
    spec = importlib.util.find_spec("resemblyzer")  # finds the package without running its __init__ (torch)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / "pretrained.pt"
        if candidate.is_file():
            return candidate
    return None


def available() -> bool:
    path = weights_path()
    return path is not None and path.is_file()


class _Storage:
    def __init__(self, dtype: type, size: int) -> None:
        self.dtype, self.size = np.dtype(dtype), size
        self.data: np.ndarray | None = None


class _Tensor:
    def __init__(self, storage: _Storage, offset: int, shape: tuple[int, ...], stride: tuple[int, ...]) -> None:
        self.storage, self.offset, self.shape, self.stride = storage, offset, shape, stride

    def array(self) -> np.ndarray:
        data = self.storage.data
        if data is None:
            raise ValueError("a tensor's storage was never read")
        item = data.itemsize
        view = np.lib.stride_tricks.as_strided(data[self.offset:], shape=self.shape,
                                               strides=tuple(s * item for s in self.stride))
        return np.array(view)


def _rebuild_tensor(storage: _Storage, offset: int, shape: tuple, stride: tuple, *_: Any) -> _Tensor:
    return _Tensor(storage, int(offset), tuple(shape), tuple(stride))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, storages: dict[str, _Storage], zipped: zipfile.ZipFile | None = None,
                 prefix: str = "") -> None:
        super().__init__(file)
        self.storages, self.zipped, self.prefix = storages, zipped, prefix

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch" and name in _DTYPES:
            return name
        raise pickle.UnpicklingError(f"the weights file holds a {module}.{name}, which a checkpoint of plain "
                                     "tensors does not; refusing to load it")

    def persistent_load(self, pid: Any) -> _Storage:
        kind, storage_type, key, _location, size = pid[:5]
        if kind != "storage" or storage_type not in _DTYPES:
            raise pickle.UnpicklingError(f"unknown storage {pid!r} in the weights file")
        if key not in self.storages:
            storage = _Storage(_DTYPES[storage_type], int(size))
            if self.zipped is not None:
                raw = self.zipped.read(f"{self.prefix}data/{key}")
                storage.data = np.frombuffer(raw, dtype=storage.dtype.newbyteorder("<"))
            self.storages[key] = storage
        return self.storages[key]


def _arrays(value: Any) -> Any:
    if isinstance(value, _Tensor):
        return value.array()
    if isinstance(value, dict):
        return {k: _arrays(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_arrays(v) for v in value)
    return value


def read_torch_checkpoint(path: Path) -> Any:
    """A torch checkpoint of tensors as the same structure of numpy arrays; ConfigError if it cannot be read."""
    try:
        if zipfile.is_zipfile(path):
            return _arrays(_read_zip(path))
        with open(path, "rb") as f:
            return _arrays(_read_legacy(f))
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"could not read the voice encoder's weights at {path} ({exc}); {INSTALL_HINT}") from exc


def _read_zip(path: Path) -> Any:
    with zipfile.ZipFile(path) as z:
        pkl = next(n for n in z.namelist() if n.endswith("data.pkl"))
        prefix = pkl[: -len("data.pkl")]
        return _Unpickler(io.BytesIO(z.read(pkl)), {}, z, prefix).load()


def _read_legacy(f: Any) -> Any:
    storages: dict[str, _Storage] = {}
    if _Unpickler(f, storages).load() != _LEGACY_MAGIC:
        raise ValueError("not a torch checkpoint (wrong magic number)")
    _Unpickler(f, storages).load()  # protocol version
    _Unpickler(f, storages).load()  # system info
    result = _Unpickler(f, storages).load()
    keys = _Unpickler(f, storages).load()
    for key in keys:
        storage = storages[key]
        count = int(np.frombuffer(f.read(8), "<i8")[0])
        raw = f.read(count * storage.dtype.itemsize)
        if len(raw) != count * storage.dtype.itemsize:
            raise ValueError(f"the weights file ends inside storage {key}")
        storage.data = np.frombuffer(raw, dtype=storage.dtype.newbyteorder("<"))
    return result
