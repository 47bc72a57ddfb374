"""``benchmarks/many_days.py --words sta`` (issue 49) on a tiny Charades-format split written by the test:
the memory holds the sentences, the questions the class text, and the script prints the lines the
issue names (accuracy, baseline, n; evidence recall; the count's day precision and recall)."""

from __future__ import annotations

import re
import sys

from benchmark_support import benchmarks

CLASSES = "c000 Turning on a light\nc001 Opening a door\nc002 Closing a door\n"
# subject S1, three days: (video, actions "cNNN start end", and the sentence written for each interval)
DAYS = [
    ("AAA01", [("c000", 1.0, 5.0, "person turns the lights on."), ("c001", 6.0, 9.0, "a person opens the door.")]),
    ("AAA02", [("c002", 0.0, 4.0, "the person closes the door."),
               ("c000", 5.0, 8.0, "someone switches the light on.")]),
    ("AAA03", [("c001", 2.0, 6.0, "person opening a door."), ("c002", 7.0, 9.5, "person shuts the door.")]),
]


def test_the_benchmark_in_the_models_words_prints_its_lines(tmp_path, monkeypatch, capsys):
    (tmp_path / "classes.txt").write_text(CLASSES, encoding="utf-8")
    rows = ["id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length"]
    lines = []
    for vid, acts in DAYS:
        actions = ";".join(f"{c} {s} {e}" for c, s, e, _ in acts)
        rows.append(f"{vid},S1,Kitchen,6,7,Yes,,door;light,,{actions},12.0")
        lines += [f"{vid} {s} {e}##{sentence}" for _, s, e, sentence in acts]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "sta.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(sys, "argv", [
        "many_days.py", "--words", "sta", "--annotations", str(tmp_path / "train.csv"),
        "--classes", str(tmp_path / "classes.txt"), "--sentences", str(tmp_path / "sta.txt"),
        "--subjects", "1", "--min-videos", "2", "--workdir", str(tmp_path / "work")])
    with benchmarks("many_days") as (many_days,):
        assert many_days.main() == 0
    out = capsys.readouterr().out
    found = dict(re.findall(r"^(\S+) accuracy=([\d.]+) baseline=[\d.]+ n=\d+$", out, re.M))
    assert set(found) == {"last-time", "first-time", "count", "order"}
    # each class is on 2 of the 3 days: 3 questions of each kind; every day holds two classes in order
    assert re.search(r"^count accuracy=[\d.]+ baseline=[\d.]+ n=3$", out, re.M)
    assert re.search(r"^order accuracy=[\d.]+ baseline=[\d.]+ n=3$", out, re.M)
    assert re.search(r"^count evidence_recall@10=[\d.]+ day_precision=[\d.]+ day_recall=[\d.]+$", out, re.M)
    assert float(found["last-time"]) == 1.0  # "switches the light on", "shuts the door": the same acts
