"""The tables ``tool_latency.py`` prints: latency per tool and size, where the time goes, and
issue 10's targets."""

from __future__ import annotations

from _common import fmt_ms, markdown_table, p50_p99

# issue 10: navigation including the first call per video; search including the query embedding
NAV_TARGET_MS, SEARCH_TARGET_MS = 5.0, 20.0
# issue 24, at 3,000 h; held rows at any size. GB read as 10^9 bytes: 2 GB = 1,907 MiB, 0.4 GB = 381 MiB
SEARCH_3000H_MS, RSS_3000H_MB, HELD_PER_1000H_MB = 25.0, 1907, 381.0

NAVIGATION = ("list_videos", "get_summary", "get_super_events", "get_macro_events", "get_subgraph",
              "search_by_time", "get_relations")


def report(sizes: list[dict], held: dict[float, tuple[float, float, float, float]]) -> str:
    cols = [f"{s['hours']:g} h" for s in sizes]
    rows = [
        ["videos / lance rows / kuzu nodes+edges"] + [
            f"{s['build']['videos']} / {s['build']['lance_rows']:,} / "
            f"{sum(v for k, v in s['build']['counts'].items() if k != 'edges'):,}+{s['build']['counts']['edges']:,}"
            for s in sizes],
        ["build time (of which MiniLM on clauses)"] + [
            f"{s['build']['build_s']:.0f} s ({s['build']['model_s']:.0f} s)"
            + (" [cached]" if s['build']['reused'] else "")
            for s in sizes],
        ["build peak RSS"] + [f"{s['build']['peak_rss_mb']:.0f} MiB" for s in sizes],
        ["size on disk: all (graph / lance / frames / manifest)"] + [
            f"{s['disk_mb']:.0f} MiB ({p['graph']:.0f} / {p['lance']:.0f} / {p['frames']:.1f} / {p['manifest']:.2f})"
            for s in sizes for p in [s.get("disk_parts_mb") or dict.fromkeys(("graph", "lance", "frames", "manifest"),
                                                                            float("nan"))]],
        ["lance: current versions' rows (the rest of lance on disk: old versions, indexes)"] + [
            f"{s['lance_live_mb']:.0f} MiB" if s.get("lance_live_mb") is not None else "n/a" for s in sizes],
        ["cold: Memory.open"] + [fmt_s(s["cold"].get("open_s")) for s in sizes],
        ["cold: import memtools.store+tools"] + [f"{s['cold']['import_s'] * 1000:.0f} ms" for s in sizes],
        ["cold: Memory.open + first get_summary"] + [f"{s['cold']['open_first_call_s'] * 1000:.0f} ms" for s in sizes],
        ["cold: first search_nodes (loads MiniLM)"] + [f"{s['cold']['first_search_s'] * 1000:.0f} ms" for s in sizes],
        ["RSS after first nav / first search"] + [
            f"{s['cold']['rss_nav_mb']:.0f} / {s['cold']['rss_search_mb']:.0f} MiB" for s in sizes],
        ["cold: hold_rows / RSS after holding the rows (fresh process) / held arrays"] + [
            f"{fmt_s(s['cold'].get('hold_s'))} / {s['cold'].get('rss_held_mb') or float('nan'):.0f} MiB / "
            f"{s['cold'].get('held_mb') or float('nan'):.0f} MiB" for s in sizes],
        ["RSS of the measuring process"] + [f"{s['rss_mb']:.0f} MiB" for s in sizes],
    ]
    if held:
        rows.append(["search rows read into memory (hold_rows) / RSS before -> after / held arrays"] + [
            "{:.2f} s / {:.0f} -> {:.0f} MiB / {:.0f} MiB".format(*held[s["hours"]]) if s["hours"] in held else "n/a"
            for s in sizes])
    names = list(sizes[0]["tools"])
    for name in names:
        cells = []
        for s in sizes:
            r = s["tools"][name]
            p50, p99 = p50_p99(r["times"])
            reopen = p50_p99(r["reopen"])[0] if r.get("reopen") else None
            first = p50_p99(r["first"]) if r.get("first") else (None, None)
            cells.append(f"{fmt_ms(p50)} / {fmt_ms(p99)} / {fmt_ms(first[0])} / {fmt_ms(first[1])} / {fmt_ms(reopen)}")
        rows.append([f"{name} p50 / p99 / first-call p50 / first-call p99 / p50 reopen (ms)"] + cells)
    out = [markdown_table(["", *cols], rows), ""]
    for s in sizes:
        prof_rows = []
        for name in names:
            r = s["tools"][name]
            p50 = p50_p99(r["times"])[0]
            prof = r["profile"]
            cpu = p50_p99(r["cpu"])[0] if r.get("cpu") else None
            prof_rows.append([name, fmt_ms(p50), fmt_ms(cpu), fmt_ms(sum(r["times"]) / len(r["times"]) * 1000),
                              fmt_ms(prof.get("kuzu", 0.0)),
                              fmt_ms(prof.get("lance", 0.0)), fmt_ms(prof.get("embed", 0.0))])
        out += [f"Where the time goes at {s['hours']:g} h (warm; mean ms per call; CPU: the process's CPU time, "
                "all threads):", "",
                markdown_table(["tool", "p50", "CPU p50", "mean", "kuzu (all)", "lance",
                                "embed query"], prof_rows), ""]
    out.append(check_targets(sizes))
    return "\n".join(out)


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return f"{seconds:.1f} s" if seconds >= 10 else f"{fmt_ms(seconds * 1000)} ms"


def check_targets(sizes: list[dict]) -> str:
    lines = ["Targets:"]
    for s in sizes:
        h = s["hours"]
        tools = s["tools"]
        cold = s["cold"]["open_first_call_s"] * 1000
        limit = 150 if h <= 2 else 1000 if h >= 1000 else None
        if limit:
            lines.append(f"- {h:g} h cold open + first call {cold:.0f} ms (target {limit}): "
                         f"{'met' if cold <= limit else 'MISSED'}")
        if h >= 1000:
            for name in NAVIGATION:
                if name not in tools:  # --only measured other tools
                    continue
                p50 = p50_p99(tools[name]["times"])[0]
                first = p50_p99(tools[name]["first"])[0]
                worst = max(p50, first)
                lines.append(f"- {h:g} h {name} p50 {p50:.1f} ms, first call per video p50 {first:.1f} ms "
                             f"(target {NAV_TARGET_MS:g}): {'met' if worst <= NAV_TARGET_MS else 'MISSED'}")
            if "search_nodes (default)" not in tools:
                continue
            p50 = p50_p99(tools["search_nodes (default)"]["times"])[0]
            lines.append(f"- {h:g} h search_nodes p50 {p50:.1f} ms incl. query embedding "
                         f"(target {SEARCH_TARGET_MS:g}): "
                         f"{'met' if p50 <= SEARCH_TARGET_MS else 'MISSED'}")
    lines += issue24_targets(sizes)
    return "\n".join(lines)


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def issue24_targets(sizes: list[dict]) -> list[str]:
    """Issue 24: at 3,000 h library-wide search_nodes p50 <= 25 ms, navigation p50 <= 5 ms, RSS
    after holding the rows <= 2 GB (1,907 MiB); held rows <= 0.4 GB (381 MiB) per 1,000 h at every size."""
    lines = []
    for s in sizes:
        h, tools, cold = s["hours"], s["tools"], s["cold"]
        held = cold.get("held_mb")
        if held is not None:
            per_1000 = held / h * 1000
            lines.append(f"- {h:g} h held rows {held:.0f} MiB = {per_1000:.0f} MiB per 1,000 h "
                         f"(issue 24: <= 381 MiB): {_verdict(per_1000 <= HELD_PER_1000H_MB)}")
        if h < 3000:
            continue
        if "search_nodes (default)" in tools:
            p50 = p50_p99(tools["search_nodes (default)"]["times"])[0]
            lines.append(f"- {h:g} h search_nodes p50 {p50:.1f} ms (issue 24: <= {SEARCH_3000H_MS:g}): "
                         f"{_verdict(p50 <= SEARCH_3000H_MS)}")
        navs = [p50_p99(tools[name]["times"])[0] for name in NAVIGATION if name in tools]
        if navs:
            lines.append(f"- {h:g} h navigation p50, slowest tool {max(navs):.1f} ms (issue 24: <= "
                         f"{NAV_TARGET_MS:g}): {_verdict(max(navs) <= NAV_TARGET_MS)}")
        rss = cold.get("rss_held_mb")
        if rss is not None:
            lines.append(f"- {h:g} h RSS after holding the rows {rss:.0f} MiB (issue 24: <= {RSS_3000H_MB}): "
                         f"{_verdict(rss <= RSS_3000H_MB)}")
    return lines
