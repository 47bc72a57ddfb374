"""Faces on keyframes: detected, described, tracked within a macro event and clustered per video.

    from memtools.faces import DlibFaces, cluster_faces
    model = DlibFaces()                    # ConfigError saying to install memtools[faces] when dlib is missing
    found = model.find(rgb_image)          # [FoundFace(box, vector)], 128-number descriptors
    faces = cluster_faces(seen)            # [memtools.store.tables.faces.Face] labelled F1, F2, ...

Opt-in (the ``faces`` extra, ``--faces``) and local: faces are biometric data and never leave the
machine (docs/faces.md). ``models`` is the seam to dlib (imported only when a model is made);
``tracks`` is plain numpy. Only dlib's HOG detector (code, Boost licence), the 5-point landmark
model and the ResNet descriptor model (public domain / CC0) are used.
"""

from __future__ import annotations

from memtools.faces.models import DlibFaces, FaceModel, FoundFace, available
from memtools.faces.tracks import THRESHOLD, Seen, cluster_faces, track

__all__ = ["THRESHOLD", "DlibFaces", "FaceModel", "FoundFace", "Seen", "available", "cluster_faces", "track"]
