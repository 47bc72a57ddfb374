"""Faces: clustering purity on real photos that ship offline, faces found on the sample's keyframes, CPU cost.

    python benchmarks/faces.py [--photos DIR] [--sample examples/sample/sample.mp4]

Data. Real face photos whose licence allows use, found offline: Grace Hopper (matplotlib's
``sample_data/grace_hopper.jpg``, US Navy, public domain) and Eileen Collins (scikit-image's
``data/astronaut.png``, NASA, public domain; its face crop is tests/face_photos/astronaut_face.jpg).
``--photos DIR`` adds more: every ``*.jpg``/``*.png`` there, its person named by the file name up to
the first digit or underscore (``obama2.jpg`` -> obama; a name with none, such as
``32bit.png``, is left out). The run in docs/faces.md added the test
photos of the ``face_recognition`` 1.3.0 sdist on PyPI (MIT; four photos of Barack Obama, one of
Joe Biden). No multi-identity face set ships in a package here (LFW, Olivetti and the like are
downloaded at run time), so each photo is also varied the way keyframes vary: shrunk to a keyframe's
512 px, flipped, halved, darker, brighter, blurred, JPEG at quality 30, turned 10 degrees. Those are
copies of few photos, not new sightings: the numbers say the method separates these people and holds
one person together under these changes, not how it does on a crowd.

Each found face is one row (its own keyframe and macro event: clustering, not tracking), clustered
by ``memtools.faces.cluster_faces`` at a sweep of thresholds; purity and inverse purity are against
the people. The sample video (examples/make_sample_video.py: drawn figures, no real face) is read at
the default build's keyframe rules; faces found there are false detections. Cost: CPU seconds of
detection and description per keyframe at the build's 512 px, times keyframes per hour.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

import cv2
import matplotlib
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, markdown_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = {"hopper": Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg",
           "collins": ROOT / "tests" / "face_photos" / "astronaut_face.jpg"}
SIDE = 512  # the build's frame_max_side: keyframes are stored at most this long


def variants(image: np.ndarray) -> dict[str, np.ndarray]:
    h, w = image.shape[:2]
    turn = cv2.getRotationMatrix2D((w / 2, h / 2), 10, 1.0)
    ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 30])
    assert ok
    return {"as is": image, "flipped": image[:, ::-1], "halved": cv2.resize(image, (w // 2, h // 2)),
            "darker": (image * 0.5).astype(np.uint8), "brighter": np.clip(image * 1.0 + 50, 0, 255).astype(np.uint8),
            "blurred": cv2.GaussianBlur(image, (7, 7), 0), "jpeg q30": cv2.imdecode(jpeg, cv2.IMREAD_COLOR),
            "turned 10°": cv2.warpAffine(image, turn, (w, h), borderMode=cv2.BORDER_REPLICATE)}


def photos(folder: Path | None) -> list[tuple[str, Path]]:
    found = [(person, path) for person, path in BUILTIN.items()]
    for path in sorted(folder.iterdir()) if folder else []:
        person = re.split(r"[\d_]", path.stem, maxsplit=1)[0].lower()
        if path.suffix.lower() in (".jpg", ".jpeg", ".png") and person:  # (face_recognition's 32bit.png: obama2 again)
            found.append((person, path))
    return found


def purity(labels: list[str], clusters: list[int]) -> tuple[float, float]:
    pairs = Counter(zip(clusters, labels, strict=True))
    n = len(labels)
    best_in_cluster: dict[int, int] = {}
    best_of_person: dict[str, int] = {}
    for (c, p), count in pairs.items():
        best_in_cluster[c] = max(best_in_cluster.get(c, 0), count)
        best_of_person[p] = max(best_of_person.get(p, 0), count)
    return sum(best_in_cluster.values()) / n, sum(best_of_person.values()) / n


def photo_rows(model, folder: Path | None):
    from memtools.faces import Seen
    from memtools.video import fit_within

    rows, people, missed, seconds, frames = [], [], [], 0.0, 0
    for person, path in photos(folder):
        image = fit_within(cv2.imread(str(path)), SIDE)
        for name, variant in variants(image).items():
            rgb = np.ascontiguousarray(variant[:, :, ::-1])
            started = time.process_time()
            found = model.find(rgb)
            seconds += time.process_time() - started
            frames += 1
            if not found:
                missed.append(f"{path.name} {name}")
                continue
            face = max(found, key=lambda f: (f.box[2] - f.box[0]) * (f.box[3] - f.box[1]))
            n = len(rows)
            rows.append(Seen(keyframe=f"k{n}", t=float(n), box=face.box, vector=face.vector, macro_id=f"m{n}"))
            people.append(person)
    return rows, people, missed, seconds / max(frames, 1)


def sample_keyframes(video: Path) -> tuple[list[np.ndarray], float]:
    from memtools.video import KeyframeConfig, fit_within, probe, sample_frames, select_keyframes, uniform_times

    info = probe(video)
    config = KeyframeConfig.default()
    keyframes = select_keyframes(sample_frames(video, uniform_times(info.duration, every_sec=config.sample_every_sec)),
                                 config)
    return [fit_within(k.image, SIDE) for k in keyframes], info.duration


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photos", type=Path, help="a folder of more face photos (person = file name's start)")
    parser.add_argument("--sample", type=Path, default=ROOT / "examples" / "sample" / "sample.mp4")
    args = parser.parse_args()
    from memtools.faces import DlibFaces, cluster_faces
    from memtools.faces.tracks import THRESHOLD

    cv2.setNumThreads(1)
    started = time.process_time()
    model = DlibFaces()
    load = time.process_time() - started
    rows, people, missed, per_photo = photo_rows(model, args.photos)
    print(f"load average {load_average()}; model load {load:.2f} CPU s")
    print(f"\nReal photos: {len(set(people))} people, {len(photos(args.photos))} photos x 8 variants; "
          f"faces found on {len(rows)} of {len(rows) + len(missed)} (missed: {', '.join(missed) or 'none'})")
    vectors = np.array([r.vector for r in rows])
    dist = np.linalg.norm(vectors[:, None] - vectors[None], axis=2)
    same = np.array([[a == b for b in people] for a in people])
    off = ~np.eye(len(rows), dtype=bool)
    print(f"descriptor distances: same person {dist[same & off].min():.2f}-{dist[same & off].max():.2f} "
          f"(median {np.median(dist[same & off]):.2f}); different people {dist[~same].min():.2f}-"
          f"{dist[~same].max():.2f} (median {np.median(dist[~same]):.2f})\n")
    table = []
    for threshold in (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8):
        faces = cluster_faces(rows, threshold)
        owner = {s.keyframe: n for n, f in enumerate(faces) for s in f.sightings}
        p, ip = purity(people, [owner[r.keyframe] for r in rows])
        mark = " (chosen)" if threshold == THRESHOLD else ""
        table.append((f"{threshold}{mark}", len(faces), f"{p:.3f}", f"{ip:.3f}", f"{2 * p * ip / (p + ip):.3f}"))
    print(markdown_table(["threshold", "clusters", "purity", "inverse purity", "F"], table))

    print()
    cost_rows = [("photos at 512 px", len(rows) + len(missed), f"{per_photo:.3f}")]
    if args.sample.is_file():
        keyframes, duration = sample_keyframes(args.sample)
        started = time.process_time()
        found = sum(len(model.find(np.ascontiguousarray(k[:, :, ::-1]))) for k in keyframes)
        per_key = (time.process_time() - started) / max(len(keyframes), 1)
        per_hour = len(keyframes) * 3600 / duration
        print(f"The sample ({args.sample.name}, {duration:.0f} s, {keyframes[0].shape[1]}x{keyframes[0].shape[0]}, "
              f"drawn figures): {len(keyframes)} keyframes at the default rules ({per_hour:.0f} an hour), "
              f"{found} face(s) found (each a false detection)")
        cost_rows.append((f"the sample's keyframes ({keyframes[0].shape[1]}x{keyframes[0].shape[0]})", len(keyframes),
                          f"{per_key:.3f}"))
    else:
        print(f"(no {args.sample}: run examples/make_sample_video.py for the sample's row)")
    print("\nCost (one thread; CPU seconds per keyframe; per hour of video at 120 keyframes an hour, the default "
          "rules' floor of one every 30 s, and at 1800, their ceiling of one every 2 s):")
    print(markdown_table(["keyframes", "n", "CPU s / keyframe", "CPU s / hour at 120", "CPU s / hour at 1800"],
                         [(*r, f"{float(r[2]) * 120:.0f}", f"{float(r[2]) * 1800:.0f}") for r in cost_rows]))


if __name__ == "__main__":
    main()
