"""The build summary people read: counts, and the model's mistakes explained, not just counted."""

from __future__ import annotations

from memtools.builder.report import BuildSummary, Issue, VideoReport


def _issue(severity: str, detail: str) -> Issue:
    return Issue(stage="extract", step="macro_0002", severity=severity, detail=detail)


def test_the_summary_says_what_was_repaired_and_that_the_rest_is_stored():
    issues = [_issue("dropped", "edge 'worker' -NEXT_TO-> 'forklift': no node 'forklift' in this answer"),
              _issue("repaired", "removed markdown fences"), _issue("repaired", "label mapped to LOCATED_IN"),
              _issue("repaired", "clamped a time"), _issue("fallback", "attempt 2 unusable: not JSON")]
    video = VideoReport(video_id="sample", source="sample.mp4", counts={"macro": 4}, issues=issues)
    text = BuildSummary(videos=[video], seconds=3).render("mem", ["mem/work/sample/report.json"])
    assert ("model output: 3 repaired (fixed, kept), 1 dropped (left out), 1 fallback (whole answer unusable, "
            "stand-in used); the rest is stored as answered:") in text
    assert "extract macro_0002 (dropped): edge 'worker' -NEXT_TO-> 'forklift'" in text
    assert "(repaired): label mapped to LOCATED_IN" in text and "clamped a time" not in text  # three shown
    assert "... and 2 more in the build report" in text
    assert "Repairs of model output: 3 repaired, 1 dropped, 1 fallback (each listed in the report)" in text


def test_a_clean_build_needs_no_repairs():
    text = BuildSummary(videos=[VideoReport(video_id="v", source="v.mp4")]).render("mem")
    assert "model output" not in text.split("Totals")[0] and "Repairs of model output: none needed" in text
