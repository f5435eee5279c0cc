"""The table: each figure beside its limit or peer, its target and whether it is met."""

from __future__ import annotations

from typing import Any

OK, MISS, INFO = "ok", "MISS", "-"


def _f(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, int | float) and abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _row(section: str, figure: str, measured: str, beside: str = "", target: str = "",
         verdict: str = INFO, key: str = "", value: Any = None) -> dict[str, Any]:
    return {"section": section, "figure": figure, "measured": measured, "beside": beside,
            "target": target, "verdict": verdict, "key": key, "value": value}


def _throughput(res: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for c, fig in res["by_concurrency"].items():
        ratio = fig["ratio"]
        rows.append(_row(
            "1", f"checkpoint steps/s, {c} run{'s' if c != '1' else ''} at once",
            f"{_f(fig['ticketiq_steps_per_s'], 0)} steps/s",
            f"raw UPDATE {_f(fig['raw_update_steps_per_s'], 0)}/s",
            ">= 0.80 of raw", OK if ratio is not None and ratio >= 0.8 else MISS,
            f"throughput.by_concurrency.{c}.ratio", ratio,
        ))
        rows[-1]["measured"] += f" (ratio {_f(ratio)})"
        if "ungrouped_steps_per_s" in fig:
            rows.append(_row(
                "1", f"  the same without group commit, {c} at once",
                f"{_f(fig['ungrouped_steps_per_s'], 0)} steps/s "
                f"(ratio {_f(fig['ungrouped_ratio'])})",
                f"group commit x{_f(fig['group_commit_gain'])}; "
                f"{_f(fig['checkpoints_per_statement'])} checkpoints per statement",
            ))
        rows.append(_row(
            "1", f"  write_checkpoint alone (no Runner), {c} at once",
            f"{_f(fig['write_checkpoint_alone_steps_per_s'], 0)}/s "
            f"(ratio {_f(fig['write_checkpoint_alone_ratio'])})",
            f"raw UPDATE {_f(fig['raw_update_steps_per_s'], 0)}/s",
        ))
        if "loop_alone_steps_per_s" in fig:
            bound = fig.get("bound") or {}
            rows.append(_row(
                "1", f"  the step loop with no checkpoint (N), {c} at once",
                f"{_f(fig['loop_alone_steps_per_s'], 0)} steps/s "
                f"({_f(fig['loop_alone_ms'], 3)} ms a step, "
                f"{_f(fig['client_cpu_us_per_step']['loop_alone'], 0)} us CPU)",
                f"raw UPDATE {_f(fig['raw_update_ms'], 3)} ms",
            ))
            rows.append(_row(
                "1", f"  bounds on A / B at {c}: write alone; seal + write = raw UPDATE",
                f"<= {_f(fig['write_checkpoint_alone_ratio'])}; {'' if c == '1' else '~'}"
                f"{_f(bound.get('loop'))}",
                f"0.80 needs seal + write at {_f(bound.get('needed_write_ratio'))} of raw",
            ))
        srv = fig.get("server", {})
        rows.append(_row(
            "1", f"  per checkpoint at {c}: server ms, WAL B, client CPU us",
            f"{_f(srv.get('write_checkpoint_mean_ms'), 3)} ms, "
            f"{_f(srv.get('write_checkpoint_wal_bytes'), 0)} B, "
            f"{_f(fig['client_cpu_us_per_step']['ticketiq'], 0)} us "
            f"({_f(fig['client_cpu_us_per_step']['write_checkpoint_alone'], 0)} alone)",
            f"UPDATE {_f(srv.get('raw_update_mean_ms'), 3)} ms, "
            f"{_f(srv.get('raw_update_wal_bytes'), 0)} B, "
            f"{_f(fig['client_cpu_us_per_step']['raw_update'], 0)} us",
        ))
    size = res["checkpoint_bytes"]
    rows.append(_row(
        "1", "checkpoint size (JSON bytes)",
        f"mean {_f(size['mean_json'], 0)} ({size['min_json']}..{size['max_json']})",
        "same bodies replayed", "about 2 KB", INFO, "throughput.checkpoint_bytes.mean_json",
        size["mean_json"],
    ))
    return rows


# issue 35: ours / the peer, medians of five, at 1 and 8 runs at once (Absurd in its best
# configuration, a worker per run at once)
PEER_TARGETS = {1: {"absurd": 1.25, "dbos": 3.5}, 8: {"absurd": 2.0, "dbos": 6.0}}


def _peer(res: dict[str, Any]) -> list[dict[str, Any]]:
    if "skipped" in res:
        return [_row("2", "DBOS Transact peer", "skipped", res["skipped"], "", "skipped")]
    rows = []
    if res.get("absurd_skipped"):
        rows.append(_row("2", "Absurd peer", "skipped", res["absurd_skipped"], "", "skipped"))
    for c, level in res.get("by_concurrency", {}).items():
        ours = level["ticketiq"]
        targets = PEER_TARGETS.get(int(c), {})
        for name, label in (("absurd", "Absurd"), ("dbos", "DBOS")):
            target = targets.get(name)
            if name not in level or target is None:
                continue
            ratio = level[f"ratio_{name}"]
            rows.append(_row(
                "2", f"{res['runs']} runs x {res['steps_per_run']} steps, {c} at once, vs {label}",
                f"{_f(ours['steps_per_s'], 0)} steps/s (x{_f(ratio)})",
                f"{label} {_f(level[name]['steps_per_s'], 0)} steps/s", f">= {target:g}x",
                OK if ratio >= target else MISS, f"peer.by_concurrency.{c}.ratio_{name}", ratio))
            if f"floor_x_{name}" in level:
                rows.append(_row(
                    "2", f"  the floor (one UPDATE a step) vs {label}, {c} at once",
                    f"x{_f(level[f'floor_x_{name}'])}",
                    f"raw UPDATE {_f(level['raw']['steps_per_s'], 0)} steps/s",
                    "", INFO, f"peer.by_concurrency.{c}.floor_x_{name}",
                    level[f"floor_x_{name}"]))
        if "statements_per_step" in ours:
            names = [n for n in ("ticketiq", "absurd", "dbos", "raw") if n in level]
            rows.append(_row(
                "2", f"  statements / transactions per step at {c} (ours, " +
                ", ".join(names[1:]) + ")",
                " / ".join(f"{_f(level[n]['statements_per_step'])}" for n in names),
                " / ".join(f"{_f(level[n]['transactions_per_step'])}" for n in names)
                + " transactions"))
    return rows


def _concurrency(res: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for latency, by_c in res["by_latency"].items():
        for c, fig in by_c.items():
            ratio = fig["ratio"]
            high = int(c) >= 32
            target = f">= {0.8:.2f} of raw" if high else ">= 0.54 (the bound)"
            met = ratio is not None and ratio >= (0.8 if high else 0.54)
            measured = f"{_f(fig['ticketiq_steps_per_s'], 0)} steps/s (ratio {_f(ratio)})"
            if "two_processes_ratio" in fig:
                measured += (f"; 2 processes {_f(fig['two_processes_steps_per_s'], 0)} "
                             f"({_f(fig['two_processes_ratio'])})")
            rows.append(_row(
                "10", f"{c} at once, model {latency} ms", measured,
                f"raw UPDATE {_f(fig['raw_update_steps_per_s'], 0)}/s", target,
                OK if met else MISS, f"concurrency.by_latency.{latency}.{c}.ratio", ratio))
            cpu = fig.get("server_cpu_us_per_step")
            wal = fig["wal_bytes_per_step"]
            if cpu:
                x = fig.get("server_cpu_x")
                rows.append(_row(
                    "10", f"  server CPU, WAL per step at {c}, {latency} ms",
                    f"{_f(cpu['ticketiq'], 0)} us (x{_f(x)}), {_f(wal['ticketiq'], 0)} B",
                    f"raw {_f(cpu['raw_update'], 0)} us, {_f(wal['raw_update'], 0)} B",
                    "<= 3x raw" if c == "32" else "",
                    (OK if x is not None and x <= 3.0 else MISS) if c == "32" else INFO,
                    f"concurrency.by_latency.{latency}.{c}.server_cpu_x", x))
    return rows


def _takeover(res: dict[str, Any]) -> list[dict[str, Any]]:
    t = res["takeover"]
    w = t["next_step_written_s"]
    rows = [_row(
        "8", f"a killed process's {t['runs']:,} runs: kill -> next step written",
        f"p50 {_f(w['p50'])} / p99 {_f(w['p99'])} / max {_f(w['max'])} s; "
        f"lost {t['lost']}, duplicates {t['duplicates']}",
        f"claimed max {_f(t['claimed_s']['max'])} s, adopted max {_f(t['adopted_s']['max'])} s",
        t.get("target", "all <= 5 s, 0 lost, 0 duplicates"), OK if t["met"] else MISS,
        "takeover.takeover.next_step_written_s.max", w["max"])]
    rows.append(_row(
        "8", "  the survivor's peak memory (VmHWM)",
        f"{_f(t['survivor_kib']['after'].get('VmHWM', 0) / 1024, 0)} MiB",
        f"{_f(t['survivor_kib']['before_kill'].get('VmRSS', 0) / 1024, 0)} MiB before the kill"))
    cpu = t.get("cpu_s") or {}
    if cpu.get("window"):
        server = cpu.get("server")
        rows.append(_row(
            "8", "  CPU, kill to the last run ended: the survivor's, the server's",
            f"{_f(cpu['survivor'])} s, {'n/a' if server is None else _f(server)} s",
            f"in {_f(cpu['window'])} s on {cpu.get('cores')} cores (at most "
            f"{_f(cpu['window'] * (cpu.get('cores') or 1))} s)", "", INFO,
            "takeover.takeover.cpu_s.server", server))
    g = t.get("survivor_gc") or {}
    if "pause_s" in g:
        gens = g.get("by_generation") or {}
        split = ", ".join(f"gen{k} {v['pauses']}: {_f(v['pause_s'])} s" for k, v in gens.items())
        per_run = g.get("objects_per_run")
        rows.append(_row(
            "8", "  the survivor's garbage collector pauses (loop stopped)",
            f"{_f(g['pause_s'])} s in all, longest {_f(g['longest_s'])} s",
            f"{g.get('pauses', g['full_collections'])} pauses ({split or 'full only'}); "
            + (f"{_f(per_run, 0)} tracked objects per run; " if per_run is not None else "")
            + "from ready to the end",
            "< 1 s in all", OK if g["pause_s"] < 1.0 else MISS,
            "takeover.takeover.survivor_gc.pause_s", g["pause_s"]))
    for n, m in res["memory"].items():
        rows.append(_row(
            "9", f"worker memory, {int(n):,} runs in flight",
            f"{_f(m['per_run_kib'], 1)} KiB per run",
            f"RSS {_f(m['rss_before_kib'] / 1024, 0)} -> "
            f"{_f(m['rss_in_flight_kib'] / 1024, 0)} MiB",
            "", INFO, f"takeover.memory.{n}.per_run_kib", m["per_run_kib"]))
    for n, m in res.get("memory_suspended", {}).items():
        rows.append(_row(
            "9", f"worker memory, {int(n):,} runs suspended",
            f"{_f(m['heap_per_run_bytes'], 0)} B of Python heap per run",
            f"RSS {_f(m['rss_before_kib'] / 1024, 0)} -> "
            f"{_f(m['rss_in_flight_kib'] / 1024, 0)} MiB ({_f(m['per_run_kib'], 1)} KiB per "
            f"run, the allocator's high water); {m['suspended_in_db']:,} suspended",
            "", INFO, f"takeover.memory_suspended.{n}.heap_per_run_bytes",
            m["heap_per_run_bytes"]))
    return rows


def _roundtrips(res: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, label in (("read_only", "statements per read-only step"),
                        ("changing", "statements per step, 1 read + 2 writes")):
        fig = res[name]
        pgss = fig.get("pg_stat_statements", {}).get("per_step")
        driver = fig["driver"]["per_step"]
        expected = fig["expected_per_step"]
        seen = pgss if pgss is not None else driver
        rows.append(_row(
            "3", label, f"{_f(seen)} (pg_stat_statements)" if pgss is not None else
            f"{_f(driver)} (driver)", f"driver {_f(driver)}", f"{expected}",
            OK if abs(seen - expected) < 1e-9 and abs(driver - expected) < 1e-9 else MISS,
            f"roundtrips.{name}.per_step", seen,
        ))
    overhead = res["read_only"]["driver"]["per_run_overhead"]
    rows.append(_row("3", "  statements per run besides its steps", _f(overhead),
                     "start_run, seal_answer, hand_on_answer"))
    return rows


def _leases(res: dict[str, Any]) -> list[dict[str, Any]]:
    pg = res.get("pg_stat_statements", {})
    upd = res.get("runs_row_updates", {})
    per_tick = pg.get("statements_per_tick", res["driver_statements_per_tick"])
    procs = res["processes"]
    return [
        _row("4", f"renewal statements per tick, {res['runs']:,} runs",
             f"{_f(per_tick)}", f"{procs} processes", "= processes",
             OK if abs(per_tick - procs) < 1e-9 and not res["leases_lost"] else MISS,
             "lease_scale.statements_per_tick", per_tick),
        _row("4", f"  database time per renewal of {res['leases_per_process']:,} leases",
             f"{_f(pg.get('db_ms_per_renewal'))} ms",
             f"client p50 {_f(res['client_ms']['p50'])} ms, p95 {_f(res['client_ms']['p95'])}",
             "", INFO, "lease_scale.db_ms_per_renewal", pg.get("db_ms_per_renewal")),
        _row("4", "  per renewal: WAL, HOT row updates",
             f"{_f((pg.get('wal_bytes_per_renewal') or 0) / 1e6)} MB",
             f"{upd.get('hot_updates', 0):,} of {upd.get('updates', 0):,} updates HOT"),
    ]


def _history(res: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    levels = res["levels"]
    labels = {"sweep_idle_ms": ("sweep_lapsed, nothing lapsed", "sweep_idle"),
              "sweep_lapsed_ms": (f"sweep_lapsed, {res['lapsed_per_sweep']} lapsed",
                                  "sweep_lapsed"),
              "adopt_ms": ("adopt_run", "adopt")}
    for key, (label, growth_key) in labels.items():
        p50s = " / ".join(_f(level[key]["p50"]) for level in levels)
        growth = res["growth_p50"][growth_key]
        worst = max(level[key]["p50"] for level in levels)
        met = growth is not None and growth <= 2.0 and worst <= 5.0
        rows.append(_row(
            "5", f"{label} p50 ms", p50s,
            "at " + " / ".join(f"{level['finished_runs']:,}" for level in levels) + " kept",
            "flat within 2x, <= 5 ms", OK if met else MISS,
            f"history.growth_p50.{growth_key}", growth,
        ))
        rows[-1]["measured"] += f" (x{_f(growth)})"
        if levels[0].get("db_mean_ms"):
            rows.append(_row(
                "5", "  database mean ms (pg_stat_statements)",
                " / ".join(_f(level["db_mean_ms"][growth_key], 3) for level in levels),
            ))
    last = levels[-1]["plans"]
    indexes = sorted({*last["sweep_idle"]["indexes"], *last["sweep_lapsed"]["indexes"],
                      *last["adopt"]["indexes"]})
    seq_scans = sorted({*last["sweep_idle"]["seq_scans"], *last["sweep_lapsed"]["seq_scans"],
                        *last["adopt"]["seq_scans"]})
    rows.append(_row(
        "5", f"  plans at {levels[-1]['finished_runs']:,} kept: indexes",
        ", ".join(indexes) or "none", "seq scans: " + (", ".join(seq_scans) or "none"),
        "index used", OK if indexes and not seq_scans else MISS, "history.indexes", indexes,
    ))
    return rows


def _wakeup(res: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for mode, label in (("notify", "through NOTIFY"),
                        ("poll", f"through the poll ({res['poll_interval_s']:g} s, LISTEN off)")):
        lat = res[mode]["latency_ms"]
        rows.append(_row("6", f"wake-up {label} p50 / p95 ms",
                         f"{_f(lat['p50'], 1)} / {_f(lat['p95'], 1)}",
                         f"max {_f(lat['max'], 1)}, {lat['n']} trials", "", INFO,
                         f"wakeup.{mode}.latency_ms.p50", lat["p50"]))
    return rows


def _recovery(res: dict[str, Any]) -> list[dict[str, Any]]:
    if "pending" in res:
        return [_row("7", "recovery time", res["pending"], "", "<= 15 s", "pending")]
    stats = res["recovery_s"]
    return [_row("7", "recovery time p50 / p95 / max s",
                 f"{_f(stats['p50'])} / {_f(stats['p95'])} / {_f(stats['max'])}",
                 f"{stats['n']} trials", "<= 15 s",
                 OK if stats["max"] <= res["target_s"] else MISS, "recovery.recovery_s.max",
                 stats["max"])] + _resume(res)


def _resume(res: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    target = res.get("resume_target_s", {})
    for detection, stats in res.get("resume_s", {}).items():
        label = "by session (liveness)" if detection == "session" else "by lease expiry alone"
        met = stats["p50"] <= target.get("p50", 0) and stats["p99"] <= target.get("p99", 0)
        rows.append(_row(
            "7", f"resume time {label} p50 / p99 / max s",
            f"{_f(stats['p50'])} / {_f(stats['p99'])} / {_f(stats['max'])}",
            f"{stats['n']} runs taken over, same run",
            "p50 <= 1 s, p99 <= 2 s" if detection == "session" else "",
            (OK if met else MISS) if detection == "session" else INFO,
            f"recovery.resume_s.{detection}.p50", stats["p50"]))
    return rows


BUILDERS = {
    "throughput": _throughput,
    "concurrency": _concurrency,
    "peer": _peer,
    "roundtrips": _roundtrips,
    "lease_scale": _leases,
    "history": _history,
    "wakeup": _wakeup,
    "takeover": _takeover,
    "recovery": _recovery,
}


def build_rows(sections: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, builder in BUILDERS.items():
        res = sections.get(name)
        if res is None:
            continue
        if "error" in res:
            rows.append(_row("?", name, "ERROR", res["error"].splitlines()[0][:80], "", "error"))
            continue
        rows.extend(builder(res))
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    headers = ("#", "figure", "measured", "beside it", "target", "verdict")
    cells = [(r["section"], r["figure"], r["measured"], r["beside"], r["target"], r["verdict"])
             for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) for cell in cells]
    return "\n".join(out)


def format_markdown(rows: list[dict[str, Any]]) -> str:
    out = ["| # | figure | measured | beside it | target | verdict |",
           "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        cells = [r["section"], r["figure"].strip(), r["measured"], r["beside"], r["target"],
                 r["verdict"]]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)
