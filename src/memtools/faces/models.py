"""The seam to dlib: faces found on an image, each a box and a 128-number descriptor.

    model = DlibFaces()              # loads the two model files once (~0.1 s)
    model.find(rgb)                  # RGB uint8 array (H, W, 3) -> [FoundFace(box=(x0, y0, x1, y1), vector)]

Detection is dlib's HOG frontal face detector (part of dlib's code, Boost licence; no model file),
run on the image upsampled ``upsample`` times (once by default: keyframes are at most 512 px on
their longer side and HOG finds faces from ~80 px, ~40 px upsampled once). Each face is aligned by
``shape_predictor_5_face_landmarks.dat`` and described by ``dlib_face_recognition_resnet_model_v1.dat``,
both released into the public domain by Davis King and shipped (CC0) in the
``face-recognition-models`` package. That package also carries ``shape_predictor_68_face_landmarks.dat``,
which is trained on iBUG 300-W and may not be used in a commercial product: memtools never loads it.
The package's ``__init__`` needs ``pkg_resources``; the files are found without importing it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memtools.errors import ConfigError

LANDMARKS = "shape_predictor_5_face_landmarks.dat"
DESCRIPTOR = "dlib_face_recognition_resnet_model_v1.dat"
INSTALL = "pip install 'memtools[faces]' (dlib-bin and face-recognition-models; see docs/faces.md)"


@dataclass(frozen=True)
class FoundFace:
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the image's pixels (clipped to it)
    vector: np.ndarray  # 128 numbers, dlib's descriptor space (euclidean; same person mostly < 0.6)


class FaceModel(Protocol):
    name: str

    def find(self, image: np.ndarray) -> list[FoundFace]: ...


def _models_folder() -> Path | None:
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "models"


def available() -> bool:
    """Whether the faces extra is installed (dlib and the two model files), without importing dlib."""
    folder = _models_folder()
    return (importlib.util.find_spec("dlib") is not None and folder is not None
            and (folder / LANDMARKS).is_file() and (folder / DESCRIPTOR).is_file())


class DlibFaces:
    """dlib's HOG detector, 5-point alignment and ResNet descriptor (``FaceModel``)."""

    name = "dlib-hog+resnet-v1"

    def __init__(self, upsample: int = 1) -> None:
        if not available():
            raise ConfigError(f"finding faces needs the faces extra, which is not installed: {INSTALL}")
        import dlib

        folder = _models_folder()
        assert folder is not None
        self.upsample = upsample
        self._detect: Any = dlib.get_frontal_face_detector()
        self._align: Any = dlib.shape_predictor(str(folder / LANDMARKS))
        self._describe: Any = dlib.face_recognition_model_v1(str(folder / DESCRIPTOR))

    def find(self, image: np.ndarray) -> list[FoundFace]:
        rgb = np.ascontiguousarray(image, dtype=np.uint8)
        height, width = rgb.shape[:2]
        out = []
        for rect in self._detect(rgb, self.upsample):
            vector = np.asarray(self._describe.compute_face_descriptor(rgb, self._align(rgb, rect)), dtype=np.float64)
            box = (max(0, rect.left()), max(0, rect.top()), min(width, rect.right()), min(height, rect.bottom()))
            out.append(FoundFace(box=box, vector=vector))
        return out
