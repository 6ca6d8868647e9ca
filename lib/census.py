"""./fastreap census: where Linux 6.12 stands on the 2007 "Too many threads"
remedies, measured in QEMU guests with 1, 2, 4, ... CPUs.

For each CPU count, one boot runs tests/kmod/kthreads.c twice:

  kthreads census            every task's pid, parent, flags, state and
                             schedstat run count; pid_max; init's children
  kthreads test storm.ko     the 2007 module-load storm replayed by
                             tests/kmod/storm.c, as a TAP test that watches
                             init's child list while it runs

The results are classified here (kernel threads by name family, parents,
threads that never ran), fitted as threads = a + b * CPUs by least squares,
extrapolated to 4,096 CPUs against 6.12's pid_max rule, and written to
docs/census.csv, docs/census.json, docs/census.md and docs/census.png.

The storm test itself, built against each image, is lib/kmod.py's.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

import build
import kmod
import runner
from common import REPO, SOURCE_PACKAGE, Error, ensure_packages, say
from flavors import FLAVORS
from kmod import STORM_PARAMS, storm_test_argv
from variants import variant_name

DOCS = REPO / "docs"
PF_KTHREAD = 0x00200000
KTHREADD = 2
TARGET_CPUS = 4096
DEFAULT_SMP = "1,2,4,8,16,32,64"
# A kernel thread is "idle since start" when /proc/PID/schedstat counts at
# most 2 runs: once in kthread() to report itself created, once into its
# thread function, where it went to sleep and was never woken again.
IDLE_PCOUNT = 2


def kmod_test(variant="stock", smp=2, flavor="fast", src=None,
              params=STORM_PARAMS, timeout=600, icount=False):
    """Boot VARIANT with SMP CPUs and run the storm test.

    Returns (status, tap_text): status is the test's exit status (0 all
    passed, 1 a test failed) or the runner's 123/124/125.
    """
    argv = storm_test_argv(variant, flavor, src, params)
    rundir = runner.new_rundir(f"kmod-{variant_name(variant)}-{smp}")
    rc = runner.run(variant, argv, flavor=flavor, smp=smp, timeout=timeout,
                    icount=icount, rundir=rundir, echo=False)
    out = rundir / "output"
    text = out.read_text(errors="replace") if out.exists() else ""
    return rc, text


# --- one census boot ------------------------------------------------------

# Families whose threads the kernel creates one per CPU (smpboot threads,
# the per-CPU worker pools); anything else that grows with CPUs shows in
# the fitted slope.
PER_CPU_FAMILIES = {"kworker/N", "kworker/N:H (highpri)", "ksoftirqd",
                    "migration", "cpuhp", "idle_inject", "watchdog", "rcuc",
                    "rcuop", "rcuog", "rcuos", "posixcputmr"}


def family(name):
    """The name family of a kernel thread, and whether it is per-CPU."""
    if name.startswith("kworker/R-"):
        f = "kworker/R (rescuer)"
    elif re.match(r"kworker/u\d+:", name):
        f = "kworker/u (unbound)"
    elif re.match(r"kworker/\d+:\d+H", name):
        f = "kworker/N:H (highpri)"
    elif re.match(r"kworker/\d+:", name):
        f = "kworker/N"
    else:
        f = re.split(r"[/-]", name, 1)[0] if "/" in name else name
    return f, f in PER_CPU_FAMILIES


def parse_census(text):
    facts = {"tasks": []}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "task" and len(parts) >= 8:
            pid, ppid, flags, state, pcount, run_ns = parts[1:7]
            facts["tasks"].append({
                "pid": int(pid), "ppid": int(ppid), "flags": int(flags, 16),
                "state": state, "pcount": int(pcount), "run_ns": int(run_ns),
                "name": " ".join(parts[7:])})
        elif parts[0] == "init_children":
            facts["init_children"] = int(parts[1])
            facts["init_children_pids"] = [int(p) for p in parts[2:]]
        elif parts[0] in ("online", "pid_max"):
            facts[parts[0]] = int(parts[1])
        elif parts[0] in ("possible", "uptime"):
            facts[parts[0]] = parts[1]
    return facts


STORM_LINE = re.compile(r"^# storm: (\w+)(?:=(\d+))? (.*)$")


SAMPLER = re.compile(r"^# sampler: (\d+) samples .* up to (\d+) storm")
BAD_SAMPLES = re.compile(r"^(?:not )?ok \d+ - during the storm no kernel "
                         r"thread was a child of pid 1 \((\d+) of (\d+)")


def parse_storm(tap):
    """The module's "storm:" lines, echoed by the test, as numbers."""
    rounds, stops, summary = [], [], {}
    sampler = {}
    for line in tap.splitlines():
        m = SAMPLER.match(line.strip())
        if m:
            sampler["samples"], sampler["max_storm_seen"] = \
                int(m.group(1)), int(m.group(2))
        m = BAD_SAMPLES.match(line.strip())
        if m:
            sampler["bad_samples"] = int(m.group(1))
        m = STORM_LINE.match(line.strip())
        if not m:
            continue
        kv = {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", m.group(3))}
        if m.group(1) == "round":
            rounds.append(kv)
        elif m.group(1) == "stop_machine":
            stops.append(kv)
        elif m.group(1) == "summary":
            summary = kv
    return {"rounds": rounds, "stop_machine": stops, "summary": summary,
            "sampler": sampler}


def summarize(facts):
    tasks = facts["tasks"]
    kth = [t for t in tasks if t["flags"] & PF_KTHREAD]
    fams = {}
    for t in kth:
        f, per_cpu = family(t["name"])
        fams.setdefault(f, {"count": 0, "per_cpu": per_cpu})
        fams[f]["count"] += 1
    not_kthreadd = [t for t in kth
                    if t["pid"] != KTHREADD and t["ppid"] != KTHREADD]
    return {
        "online": facts.get("online"),
        "possible": facts.get("possible"),
        "uptime": facts.get("uptime"),
        "pid_max": facts.get("pid_max"),
        "tasks": len(tasks),
        "kthreads": len(kth),
        "user_tasks": len(tasks) - len(kth),
        "kthreads_parent_kthreadd": sum(1 for t in kth
                                        if t["ppid"] == KTHREADD),
        "kthreads_parent_init": sum(1 for t in kth if t["ppid"] == 1),
        "kthreads_parent_other": [f"{t['pid']} {t['name']} ppid "
                                  f"{t['ppid']}" for t in not_kthreadd],
        "init_children": facts.get("init_children"),
        "init_children_kthreads": sum(
            1 for t in kth if t["pid"] in facts.get("init_children_pids", [])),
        "never_ran": sum(1 for t in kth if t["pcount"] == 0),
        "idle_since_start": sum(1 for t in kth
                                if 0 <= t["pcount"] <= IDLE_PCOUNT),
        "idle_since_start_names": sorted(
            t["name"] for t in kth if 0 <= t["pcount"] <= IDLE_PCOUNT),
        "pcount_unknown": sum(1 for t in kth if t["pcount"] < 0),
        "families": fams,
    }


def census_boot(variant, smp, flavor="fast", mem="2G", timeout=900,
                icount=False):
    """Boot once with SMP CPUs: census first, then the storm test."""
    binary = kmod.guest_binary()
    argv = storm_test_argv(variant, flavor)
    script = (f'K={shlex.quote(str(binary))}; '
              f'"$K" census >"$FASTREAP_OUT/census.txt" 2>&1; '
              f'echo $? >"$FASTREAP_OUT/census.rc"; '
              f'{shlex.join(argv)} >"$FASTREAP_OUT/kmod.tap" 2>&1; '
              f'echo $? >"$FASTREAP_OUT/kmod.rc"')
    rundir = runner.new_rundir(
        f"census-{variant_name(variant)}-{smp}")
    t0 = time.time()
    rc = runner.run(variant, ["sh", "-c", script], flavor=flavor, smp=smp,
                    mem=mem, timeout=timeout, icount=icount, rundir=rundir,
                    echo=False)
    seconds = time.time() - t0
    out = rundir / "out"
    ctext = (out / "census.txt").read_text(errors="replace") \
        if (out / "census.txt").exists() else ""
    # Many TCG vCPUs on a small, shared host starve each other: RCU stall
    # reports are then expected.  Keep the data, record the splat.
    splats = []
    if (rundir / "splats.txt").exists():
        splats = sorted(set(re.sub(r"^\[[ \d.]+\] ", "", l) for l in (
            rundir / "splats.txt").read_text(errors="replace").splitlines()))
    if rc not in (0, runner.EXIT_SPLAT) or "task " not in ctext:
        raise Error(f"census boot with --smp {smp} failed (status {rc}; "
                    f"see {rundir})")
    facts = parse_census(ctext)
    row = summarize(facts)
    tap = (out / "kmod.tap").read_text(errors="replace") \
        if (out / "kmod.tap").exists() else ""
    krc = (out / "kmod.rc").read_text().strip() \
        if (out / "kmod.rc").exists() else "?"
    row.update({
        "smp": smp, "boot_seconds": round(seconds, 1), "rundir": str(rundir),
        "runner_status": rc, "splats": splats,
        "kmod_status": int(krc) if krc.lstrip("-").isdigit() else None,
        "kmod_failed": [l for l in tap.splitlines()
                        if l.startswith("not ok")],
        "storm": parse_storm(tap),
        "kmod_tap": tap,
    })
    info = json.loads((rundir / "run-info.json").read_text())
    row["accel"] = info.get("accel") + ("-icount" if icount else "")
    return row, tap


# --- fitting and the pid_max rule -----------------------------------------

def count_cpus(cpulist):
    """Number of CPUs in a kernel cpu list such as "0-3,8"."""
    n = 0
    for part in str(cpulist or "").split(","):
        if re.fullmatch(r"\d+-\d+", part):
            lo, hi = map(int, part.split("-"))
            n += hi - lo + 1
        elif part.isdigit():
            n += 1
    return n


def fit(xs, ys):
    """Least squares y = a + b x; returns (a, b, r2)."""
    n = len(xs)
    if n < 2:
        return (ys[0] if ys else 0.0), 0.0, 1.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    b = sxy / sxx if sxx else 0.0
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    return a, b, (1 - ss_res / ss_tot) if ss_tot else 1.0


def pid_max_rule(tree):
    """6.12's default pid_max from the tree: verify, and return a function.

    kernel/pid.c: pid_max = min(pid_max_max, max(pid_max,
    PIDS_PER_CPU_DEFAULT * num_possible_cpus())), with PID_MAX_DEFAULT,
    PID_MAX_LIMIT and PIDS_PER_CPU_DEFAULT from include/linux/threads.h.
    """
    pid_c = (tree / "kernel" / "pid.c").read_text()
    threads_h = (tree / "include" / "linux" / "threads.h").read_text()
    body = re.sub(r"\s+", " ", pid_c)
    want = ("pid_max = min(pid_max_max, max_t(int, pid_max, "
            "PIDS_PER_CPU_DEFAULT * num_possible_cpus()));")
    ok = want in body
    per_cpu = re.search(r"#define PIDS_PER_CPU_DEFAULT\s+(\d+)", threads_h)
    default = re.search(r"#define PID_MAX_DEFAULT \(IS_ENABLED\("
                        r"CONFIG_BASE_SMALL\) \? 0x1000 : 0x8000\)",
                        threads_h)
    limit = re.search(r"\(sizeof\(long\) > 4 \? 4 \* 1024 \* 1024",
                      threads_h)
    ok = ok and per_cpu and default and limit
    per_cpu = int(per_cpu.group(1)) if per_cpu else 1024
    rule = {"verified": bool(ok), "pid_c_line": want,
            "pids_per_cpu_default": per_cpu, "pid_max_default": 0x8000,
            "pid_max_limit": 4 * 1024 * 1024}

    def pid_max(cpus):
        return min(rule["pid_max_limit"],
                   max(rule["pid_max_default"], per_cpu * cpus))
    return rule, pid_max


# --- outputs --------------------------------------------------------------

def storm_numbers(row):
    s = row["storm"]
    rounds = s["rounds"]
    threads = sum(r.get("cpus", 0) for r in rounds)
    create = sum(r.get("create_ns", 0) for r in rounds)
    stop = sum(r.get("stop_ns", 0) for r in rounds)
    sm = [x.get("ns", 0) for x in s["stop_machine"]]
    per_round = sorted(r.get("create_ns", 0) + r.get("stop_ns", 0)
                       for r in rounds)
    med = per_round[len(per_round) // 2] if per_round else None
    cpus = rounds[0].get("cpus") if rounds else None
    return {
        "storm_round_ms": med / 1e6 if med is not None else None,
        "storm_us_per_thread": med / cpus / 1e3 if med and cpus else None,
        "storm_threads": threads,
        "storm_create_ms": create / 1e6,
        "storm_stop_ms": stop / 1e6,
        "stop_machine_ms": (sum(sm) / len(sm) / 1e6) if sm else None,
        "stop_machine_pids": s["summary"].get("stop_machine_pids"),
        "storm_pids": sum(r.get("pids", 0) for r in rounds),
    }


def write_outputs(rows, meta, outdir, name="census"):
    outdir.mkdir(parents=True, exist_ok=True)
    fams = sorted({f for r in rows for f in r["families"]},
                  key=lambda f: (-max(r["families"].get(f, {}).get(
                      "count", 0) for r in rows), f))
    cols = ["cpus", "online", "pid_max", "tasks", "kthreads",
            "kthreads_parent_kthreadd", "kthreads_parent_init",
            "init_children", "init_children_kthreads", "never_ran",
            "idle_since_start", "storm_threads", "storm_create_ms",
            "storm_stop_ms", "storm_round_ms", "storm_us_per_thread",
            "stop_machine_ms", "stop_machine_pids",
            "kmod_status", "boot_seconds"]
    fcols = ["fam:" + f for f in fams]
    lines = [",".join(cols + [json.dumps(c) if "," in c or " " in c else c
                              for c in fcols])]
    for r in rows:
        st = storm_numbers(r)
        vals = {**r, **st, "cpus": r["smp"]}
        out = []
        for c in cols:
            v = vals.get(c)
            out.append("" if v is None else
                       (f"{v:.3f}" if isinstance(v, float) else str(v)))
        out += [str(r["families"].get(f, {}).get("count", 0)) for f in fams]
        lines.append(",".join(out))
    (outdir / f"{name}.csv").write_text("\n".join(lines) + "\n")

    slim = [{k: v for k, v in r.items()} for r in rows]
    (outdir / f"{name}.json").write_text(json.dumps(
        {"meta": meta, "rows": slim}, indent=1) + "\n")

    # gnuplot: threads vs CPUs and the fit line
    a, b = meta["fit"]["a"], meta["fit"]["b"]
    fd, dat = tempfile.mkstemp(suffix=".dat", prefix="census-plot-")
    os.close(fd)
    dat = Path(dat)
    dat.write_text("".join(f"{r['smp']} {r['kthreads']}\n" for r in rows))
    gp = f"""set terminal png size 900,560
set output '{outdir / (name + ".png")}'
set title "Kernel threads after boot, Linux {meta['kernelrelease']} ({meta['accel']}), {meta['variant']}"
set xlabel "CPUs (QEMU --smp)"
set ylabel "kernel threads"
set key left top
set grid
set xrange [0:*]
set yrange [0:*]
f(x) = {a:.4f} + {b:.4f}*x
plot '{dat}' using 1:2 with points pt 7 ps 1.5 title "measured", \\
     f(x) with lines lw 2 title sprintf("fit: %.1f + %.3f x CPUs", {a:.4f}, {b:.4f})
"""
    r = subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True)
    dat.unlink(missing_ok=True)
    if r.returncode != 0:
        say(f"gnuplot failed: {r.stderr.strip()[:200]}")

    (outdir / f"{name}.md").write_text(markdown(rows, meta, fams, name))


def markdown(rows, meta, fams, name="census"):
    fitm, ext = meta["fit"], meta["extrapolation"]
    L = []
    L.append("# Kernel-thread census")
    L.append("")
    L.append(f"Generated by `{meta['command']}` on {meta['date']}: "
             f"{meta['source_package']} {meta['source_version']}, kernel "
             f"{meta['kernelrelease']}, variant {meta['variant']}/"
             f"{meta['flavor']}, accelerator {meta['accel']} "
             f"(QEMU {meta['qemu']}), host {meta['host_cpus']} CPUs. "
             "One boot per CPU count; the census is taken right after "
             "boot, before the storm module is loaded.")
    L.append("")
    L.append("| CPUs | online | kthreads | per-CPU families | of kthreadd "
             "| of init | init's children | pid_max | pcount=0 | idle since start "
             "| boot s |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        per_cpu = sum(v["count"] for v in r["families"].values()
                      if v["per_cpu"])
        L.append(f"| {r['smp']} | {r['online']} | {r['kthreads']} | "
                 f"{per_cpu} | {r['kthreads_parent_kthreadd']} | "
                 f"{r['kthreads_parent_init']} | {r['init_children']} | "
                 f"{r['pid_max']} | {r['never_ran']} | {r['idle_since_start']} | "
                 f"{r['boot_seconds']} |")
    for r in rows:
        if r.get("splats"):
            L.append("")
            L.append(f"With {r['smp']} CPUs the kernel log showed: "
                     + "; ".join(f"`{x.strip()}`" for x in r["splats"])
                     + f" (runner status {r['runner_status']}).  Under TCG "
                     f"{r['smp']} vCPUs share {os.cpu_count()} host cores; "
                     "a vCPU that is not scheduled for seconds looks "
                     "stalled to RCU.  The data of that boot is kept.")
    L.append("")
    L.append("\"of kthreadd\" counts kernel threads whose parent is pid 2; "
             "kthreadd itself (parent 0) is the one kernel thread not "
             "counted there.  \"pcount\" is the run count in "
             "/proc/PID/schedstat: 0 would mean never scheduled, but every "
             "kernel thread runs once inside kthread() to report itself "
             "created.  \"idle since start\" counts kernel threads with at "
             f"most {IDLE_PCOUNT} runs: created, entered their thread "
             "function, went to sleep and were never woken again (names in "
             f"docs/{name}.json, idle_since_start_names).")
    L.append("")
    L.append("## Kernel threads by name family")
    L.append("")
    L.append("| family | per-CPU | " + " | ".join(
        f"{r['smp']} CPUs" for r in rows) + " | slope (per CPU) |")
    L.append("|---|:---:|" + "---:|" * (len(rows) + 1))
    xs = [r["smp"] for r in rows]
    for f in fams:
        ys = [r["families"].get(f, {}).get("count", 0) for r in rows]
        pc = any(r["families"].get(f, {}).get("per_cpu") for r in rows)
        _, fb, _ = fit(xs, ys)
        L.append(f"| `{f}` | {'yes' if pc else ''} | "
                 + " | ".join(map(str, ys)) + f" | {fb:.3f} |")
    L.append("")
    L.append("## Fit and extrapolation to 4,096 CPUs")
    L.append("")
    L.append(f"Least squares over {len(rows)} boots: **kthreads = "
             f"{fitm['a']:.1f} + {fitm['b']:.3f} x CPUs** "
             f"(R^2 = {fitm['r2']:.4f}).")
    L.append("")
    rule = meta["pid_max_rule"]
    L.append(f"pid_max rule ({'verified in' if rule['verified'] else 'NOT found as expected in'} "
             f"`kernel/pid.c` of the tree): `{rule['pid_c_line']}` with "
             f"PID_MAX_DEFAULT = {rule['pid_max_default']}, "
             f"PIDS_PER_CPU_DEFAULT = {rule['pids_per_cpu_default']}, "
             f"pid_max_max = PID_MAX_LIMIT = {rule['pid_max_limit']} "
             "(64-bit, !BASE_SMALL).  Measured pid_max matches the rule at "
             f"every CPU count: {'yes' if meta['pid_max_matches'] else 'NO'}.")
    L.append("")
    L.append("| at 4,096 CPUs | value |")
    L.append("|---|---:|")
    L.append(f"| kernel threads (extrapolated) | {ext['kthreads']:.0f} |")
    L.append(f"| default pid_max, 6.12 rule | {ext['pid_max']} |")
    L.append(f"| kthreads / pid_max | {100 * ext['fraction']:.2f} % |")
    L.append(f"| kthreads / 32,768 (the 2007 limit) | "
             f"{100 * ext['fraction_2007']:.1f} % |")
    L.append("")
    L.append("## The module-load storm (tests/kmod/storm.c)")
    L.append("")
    L.append(f"Module parameters {' '.join(meta['storm_params'])}: each "
             "round creates one kthread bound to each online CPU "
             "(kthread_create_on_cpu + wake_up_process) and stops them all "
             "(kthread_stop); then stop_machine() runs on all CPUs.  Times "
             + ("are guest ktime under single-threaded TCG with -icount "
                "(guest time counts instructions: repeatable, not "
                "wall-clock)." if "icount" in str(meta["accel"]) else
                "are guest ktime under TCG, whose vCPUs share the host's "
                f"{meta['host_cpus']} cores, so they are inflated and "
                "noisy."))
    L.append("")
    L.append("| CPUs | threads | create ms (all rounds) | stop ms "
             "(all rounds) | median round ms | us per thread "
             "| stop_machine ms (mean) | pids used by stop_machine "
             "| /proc samples: total, kthreads of init, most storm threads "
             "seen | TAP |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        st = storm_numbers(r)
        sm = r["storm"].get("sampler", {})

        def f(v, fmt):
            return "" if v is None else format(v, fmt)
        tap = "pass" if r["kmod_status"] == 0 else \
            f"FAIL ({r['kmod_status']}): " + "; ".join(r["kmod_failed"])
        L.append(f"| {r['smp']} | {st['storm_threads']} | "
                 f"{f(st['storm_create_ms'], '.2f')} | "
                 f"{f(st['storm_stop_ms'], '.2f')} | "
                 f"{f(st['storm_round_ms'], '.2f')} | "
                 f"{f(st['storm_us_per_thread'], '.1f')} | "
                 f"{f(st['stop_machine_ms'], '.2f')} | "
                 f"{f(st['stop_machine_pids'], 'd')} | "
                 f"{sm.get('samples', '?')}, {sm.get('bad_samples', '?')}, "
                 f"{sm.get('max_storm_seen', '?')} | {tap} |")
    sf = meta.get("storm_fit")
    if sf:
        L.append("")
        L.append(f"Median round (create + stop one kthread per CPU) "
                 f"against CPUs: linear fit {sf['a']:.2f} + {sf['b']:.3f} "
                 f"x CPUs ms (R^2 = {sf['r2']:.4f}); a quadratic cost, as "
                 "when each exiting thread was looked up on init's child "
                 "list in 2007, would show as a per-thread cost growing "
                 "with CPUs.")
    L.append("")
    L.append("Reproduce: `" + meta["command"] + f"`; raw data in "
             f"docs/{name}.json and docs/{name}.csv, plot in docs/{name}.png.")
    L.append("")
    return "\n".join(L)


def qemu_version():
    try:
        r = subprocess.run(["qemu-system-x86_64", "--version"],
                           capture_output=True, text=True)
        m = re.search(r"version (\S+)", r.stdout)
        return m.group(1) if m else "?"
    except OSError:
        return "?"


def make_meta(rows, a, smps, info, img, rule, pid_max):
    xs = [r["online"] for r in rows]
    a_, b_, r2 = fit(xs, [r["kthreads"] for r in rows])
    storm_ms = [storm_numbers(r)["storm_round_ms"] or 0.0 for r in rows]
    sa, sb, sr2 = fit(xs, storm_ms)
    threads4k = a_ + b_ * TARGET_CPUS
    meta = {
        "command": f"./fastreap census {a.variant} --smp "
                   + ",".join(str(r["smp"]) for r in rows)
                   + ("" if a.flavor == "fast" else f" --flavor {a.flavor}")
                   + (" --icount" if a.icount else "")
                   + ("" if a.name == "census" else f" --name {a.name}"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "source_package": info["source_package"],
        "source_version": subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", SOURCE_PACKAGE],
            capture_output=True, text=True).stdout.strip(),
        "kernelrelease": info["kernelrelease"],
        "variant": info["variant"], "flavor": a.flavor, "image": img.name,
        "accel": rows[0]["accel"], "qemu": qemu_version(),
        "host_cpus": os.cpu_count(),
        "storm_params": STORM_PARAMS,
        "fit": {"a": a_, "b": b_, "r2": r2, "x": "online CPUs",
                "y": "kernel threads"},
        "storm_fit": {"a": sa, "b": sb, "r2": sr2},
        "pid_max_rule": rule,
        "pid_max_matches": all(
            r["pid_max"] == pid_max(count_cpus(r["possible"])) for r in rows),
        "extrapolation": {"cpus": TARGET_CPUS, "kthreads": threads4k,
                          "pid_max": pid_max(TARGET_CPUS),
                          "fraction": threads4k / pid_max(TARGET_CPUS),
                          "fraction_2007": threads4k / 32768},
    }
    return meta


def render(out, name="census"):
    """Rewrite the outputs from NAME.json, re-reading each storm TAP."""
    data = json.loads((out / f"{name}.json").read_text())
    rows, meta = data["rows"], data["meta"]
    for r in rows:
        tap = r.get("kmod_tap")
        if tap is None:
            f = Path(r["rundir"]) / "out" / "kmod.tap"
            tap = f.read_text(errors="replace") if f.exists() else ""
            r["kmod_tap"] = tap
        if tap:
            r["storm"] = parse_storm(tap)
    write_outputs(rows, meta, out, name)
    for ext in ("csv", "json", "md", "png"):
        print(out / f"{name}.{ext}")
    return 0


def main(args):
    p = argparse.ArgumentParser(
        prog="fastreap census",
        description="Kernel-thread census across CPU counts, the storm "
        "module test at each, a fit to 4,096 CPUs; writes docs/census.*")
    p.add_argument("--smp", default=DEFAULT_SMP, metavar="LIST",
                   help=f"comma-separated CPU counts (default {DEFAULT_SMP})")
    p.add_argument("--flavor", default="fast", choices=FLAVORS)
    p.add_argument("--mem", default="2G")
    p.add_argument("--timeout", type=int, default=900, metavar="SECONDS",
                   help="per boot (default 900)")
    p.add_argument("--out", default=str(DOCS), metavar="DIR",
                   help="where census.{csv,json,md,png} go (default docs/)")
    p.add_argument("--kmod-only", action="store_true",
                   help="only run the storm TAP test at the first --smp "
                   "count and print it")
    p.add_argument("--icount", action="store_true",
                   help="single-threaded TCG counting instructions: "
                   "repeatable guest timings (slower boots)")
    p.add_argument("--name", default="census", metavar="NAME",
                   help="output file stem (default census: DIR/census.*)")
    p.add_argument("--render", action="store_true",
                   help="no boots: rewrite the outputs from DIR/census.json "
                   "(after a change to the tables or the plot)")
    p.add_argument("variant", nargs="?", default="stock")
    argv = list(args.args)
    if argv[:1] == ["--"]:
        # "./fastreap census --smp 1,2" is refused by the top-level parser
        # (argparse.REMAINDER does not take a leading option), so both
        # "./fastreap census stock --smp 1,2" and
        # "./fastreap census -- --smp 1,2 stock" are accepted.
        argv = argv[1:]
    a = p.parse_args(argv)
    try:
        smps = [int(x) for x in a.smp.split(",") if x.strip()]
    except ValueError:
        raise Error(f"--smp wants a comma-separated list of integers, not "
                    f"'{a.smp}'")
    if not smps or min(smps) < 1:
        raise Error("--smp: CPU counts must be >= 1")
    ensure_packages("build", "run", extra=["gnuplot-nox"])

    if a.kmod_only:
        rc, tap = kmod_test(a.variant, smps[0], a.flavor, icount=a.icount)
        print(tap, end="")
        return rc

    if a.render:
        return render(Path(a.out), a.name)

    img = build.build(a.variant, a.flavor)
    info = json.loads((img / "build-info.json").read_text())
    rule, pid_max = pid_max_rule(Path(info["tree"]))
    out = Path(a.out)
    rows = []
    for smp in smps:
        say(f"census: booting {a.variant} with --smp {smp}")
        row, tap = census_boot(a.variant, smp, a.flavor, a.mem, a.timeout,
                               a.icount)
        st = storm_numbers(row)
        say(f"census: {smp} CPUs: online {row['online']}, "
            f"{row['kthreads']} kthreads, pid_max {row['pid_max']}, "
            f"of init {row['kthreads_parent_init']}, storm "
            f"{st['storm_create_ms'] + st['storm_stop_ms']:.1f} ms, "
            f"kmod test {'pass' if row['kmod_status'] == 0 else 'FAIL'} "
            f"({row['boot_seconds']} s)")
        if row["online"] != smp:
            say(f"census: WARNING: asked for {smp} CPUs, the guest saw "
                f"{row['online']}")
        rows.append(row)
        # Written after every boot, so a long run leaves partial results.
        write_outputs(rows, make_meta(rows, a, smps, info, img, rule,
                                      pid_max), out, a.name)

    meta = make_meta(rows, a, smps, info, img, rule, pid_max)
    a_, b_ = meta["fit"]["a"], meta["fit"]["b"]
    r2, threads4k = meta["fit"]["r2"], meta["extrapolation"]["kthreads"]
    say(f"census: kthreads = {a_:.1f} + {b_:.3f} x CPUs (R^2 {r2:.4f}); at "
        f"{TARGET_CPUS} CPUs {threads4k:.0f} of pid_max "
        f"{pid_max(TARGET_CPUS)} ({100 * threads4k / pid_max(TARGET_CPUS):.2f}"
        f" %)")
    for ext in ("csv", "json", "md", "png"):
        print(out / f"{a.name}.{ext}")
    return 0 if all(r["kmod_status"] == 0 for r in rows) else 1
