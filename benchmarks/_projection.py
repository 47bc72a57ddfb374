"""Project ``tool_latency.py``'s measurements to larger libraries (issue 24's projection table).

    python benchmarks/_projection.py results.json            # the JSON that --json wrote

How each quantity is fitted over the measured sizes (least squares):

* memory and disk (RSS after holding the rows, held arrays, size on disk) and open time:
  a straight line ``a + b * hours`` (they are a fixed part plus a per-hour part);
* latencies (search_nodes wall and CPU time, the slowest navigation tool): a power law
  ``c * hours ** k`` (log-log line), so a latency that does not grow keeps ``k`` near 0 and a
  scan keeps ``k`` near 1;
* a fit whose slope comes out negative (noise larger than the growth) is shown as flat: the
  mean of the measured sizes;
* build time: the store's writing (build seconds less the model's seconds on new clauses; see
  ``_bench_build.py``), ``a * hours + b * hours ** 2`` through the largest build's progress
  lines (hours written, seconds so far): each 100 h costs more as the tables grow, and the
  quadratic term is that growth. Without progress lines, the sizes' totals.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from _common import markdown_table, p50_p99
from _latency_report import NAVIGATION

TARGETS = (10_000.0, 100_000.0)


def _flat(ys: Sequence[float]) -> tuple[Callable[[float], float], str]:
    mean = float(np.mean(ys))
    return (lambda h: mean), f"flat (no growth measured): mean {mean:.4g}"


def linear(xs: Sequence[float], ys: Sequence[float]) -> tuple[Callable[[float], float], str]:
    b, a = np.polyfit(xs, ys, 1)
    if b <= 0:
        return _flat(ys)
    return (lambda h: a + b * h), f"{a:.4g} + {b:.4g} * h"


def power(xs: Sequence[float], ys: Sequence[float]) -> tuple[Callable[[float], float], str]:
    k, log_c = np.polyfit(np.log(xs), np.log(np.maximum(ys, 1e-6)), 1)
    if k <= 0:
        return _flat(ys)
    c = math.exp(log_c)
    return (lambda h: c * h ** k), f"{c:.4g} * h^{k:.3f}"


def quadratic(xs: Sequence[float], ys: Sequence[float]) -> tuple[Callable[[float], float], str]:
    x = np.asarray(xs, dtype=float)
    (a, b), *_ = np.linalg.lstsq(np.stack([x, x * x], axis=1), np.asarray(ys, dtype=float), rcond=None)
    return (lambda h: a * h + b * h * h), f"{a:.4g} * h + {b:.4g} * h^2"


def _p50(s: dict, name: str) -> float | None:
    tool = s["tools"].get(name)
    return p50_p99(tool["times"])[0] if tool else None


def _cpu_p50(s: dict, name: str) -> float | None:
    tool = s["tools"].get(name)
    return p50_p99(tool["cpu"])[0] if tool and tool.get("cpu") else None


def _nav(s: dict) -> float | None:
    values = [v for v in (_p50(s, n) for n in NAVIGATION) if v is not None]
    return max(values) if values else None


QUANTITIES: list[tuple[str, Callable[[dict], float | None], Callable, str]] = [
    ("RSS after holding the rows (MiB)", lambda s: s["cold"].get("rss_held_mb"), linear, "{:,.0f}"),
    ("held rows, arrays (MiB)", lambda s: s["cold"].get("held_mb"), linear, "{:,.0f}"),
    ("Memory.open (ms)", lambda s: (s["cold"].get("open_s") or math.nan) * 1000, linear, "{:,.1f}"),
    ("open + first get_summary (ms)", lambda s: s["cold"]["open_first_call_s"] * 1000, linear, "{:,.0f}"),
    ("search_nodes (default) p50 (ms)", lambda s: _p50(s, "search_nodes (default)"), power, "{:,.1f}"),
    ("search_nodes (default) CPU p50 (ms)", lambda s: _cpu_p50(s, "search_nodes (default)"), power, "{:,.1f}"),
    ("slowest navigation tool p50 (ms)", _nav, power, "{:,.2f}"),
    ("size on disk (MiB)", lambda s: s["disk_mb"], linear, "{:,.0f}"),
    ("lance, current versions' rows (MiB)", lambda s: s.get("lance_live_mb"), linear, "{:,.0f}"),
    ("graph on disk (MiB)", lambda s: (s.get("disk_parts_mb") or {}).get("graph"), linear, "{:,.0f}"),
    ("build peak RSS (MiB)", lambda s: s["build"]["peak_rss_mb"], linear, "{:,.0f}"),
    ("lance on disk (MiB)", lambda s: (s.get("disk_parts_mb") or {}).get("lance"), linear, "{:,.0f}"),
]


def _build_points(sizes: list[dict]) -> tuple[list[float], list[float]]:
    """(hours, seconds of writing) along the largest build: its progress lines, less the model's
    seconds on new clauses (model seconds restart in every run of a resumed build)."""
    largest = max(sizes, key=lambda s: s["hours"])
    lines = largest.get("progress") or []
    if len(lines) < 3:
        return [s["hours"] for s in sizes], [s["build"]["build_s"] - s["build"]["model_s"] for s in sizes]
    earlier: dict[int, float] = {}
    xs, ys = [], []
    for line in lines:
        earlier[line["run"]] = line["model_s"]
        xs.append(line["hours"])
        ys.append(line["build_s"] - sum(earlier.values()))
    return xs, ys


def projection(sizes: list[dict], targets: Sequence[float] = TARGETS) -> str:
    sizes = sorted(sizes, key=lambda s: s["hours"])
    hours = [s["hours"] for s in sizes]
    header = ["", *(f"{h:,.0f} h measured" for h in hours), "fit", *(f"{t:,.0f} h projected" for t in targets)]
    rows = []
    for label, get, fit, fmt in QUANTITIES:
        ys = [get(s) for s in sizes]
        if any(y is None or math.isnan(y) for y in ys) or len(ys) < 2:
            continue
        f, formula = fit(hours, ys)
        rows.append([label, *(fmt.format(y) for y in ys), formula, *(fmt.format(f(t)) for t in targets)])
    done_h, write_s = _build_points(sizes)
    if len(done_h) >= 2:
        f, formula = quadratic(done_h, write_s)
        rows.append(["build time, writing (s)", *(f"{s['build']['build_s'] - s['build']['model_s']:,.0f}"
                                                   for s in sizes), formula,
                     *(f"{f(t):,.0f}" for t in targets)])
    return markdown_table(header, rows)


def main() -> None:
    sizes = json.loads(Path(sys.argv[1]).read_text())
    print(projection(sizes))


if __name__ == "__main__":
    main()
