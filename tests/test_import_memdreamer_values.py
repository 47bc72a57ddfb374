"""The MEMDREAMER importer's tolerant value readers: time ranges and label mapping."""

from __future__ import annotations

from memtools.memdreamer.values import fit_label, time_range
from memtools.schema import EdgeCategory, NodeKind


def test_time_ranges_in_every_shape():
    assert time_range([1, "2.5"]) == (1.0, 2.5)
    assert time_range({"start": "0:01:05", "end": 70}) == (65.0, 70.0)
    assert time_range({"start_sec": 3}) == (3.0, 3.0)
    assert time_range("soon") is None and time_range([None, None]) is None


def test_labels_fit_by_endpoint_kinds():
    macro, sup, evt, ent = NodeKind.MACRO, NodeKind.SUPER, NodeKind.EVENT, NodeKind.ENTITY
    assert fit_label("LEADS_TO", macro, macro) == (EdgeCategory.MACRO_CAUSAL, "CAUSES", False)
    assert fit_label("LEADS_TO", sup, sup) == (EdgeCategory.PROGRESSION, "LEADS_TO", False)
    assert fit_label("CAUSES", sup, sup) == (EdgeCategory.PROGRESSION, "LEADS_TO", False)
    assert fit_label("AFTER", evt, evt) == (EdgeCategory.TEMPORAL, "BEFORE", True)
    assert fit_label("BEFORE", macro, macro) is None
    assert fit_label("LOCATED_IN", evt, ent) is None
