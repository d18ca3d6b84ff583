"""The machinery the fuzzers share: a pool of worker processes with an address-space limit and a
CPU-time limit per case, the tally of outcomes, and the command line's options and report.

A fuzzer is a *harness*: an object with

``outcomes``                 the outcome names it reports, ``"ok"`` first;
``prepare(index)``           build case ``index`` in the worker (not timed: writing inputs is the generator's work);
``run(case, index)``         run the user paths on it (timed) and return its record
                             (``case``, ``base``, ``mutators``, ``outcome``, ``step``, ``detail``);
``release(case)``            clean up after it (not timed);
``name(index)``              ``(base, mutators)`` of a case (in the parent, for a worker that died);
``save(folder, record)``     keep the input of a failing case;
``preload()``                import what the paths use, once, before the workers fork;
``close()``                  (optional) clean up after the run, in the parent.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

#: A worker is replaced after this many cases, so caches and fragmentation cannot add up across cases.
CASES_PER_WORKER = 400
GIB = 1 << 30
#: Outcomes that are not failures; every other one is.
PASSING = ("ok", "documented")


class Stall(BaseException):
    """Raised by the CPU-time alarm (a BaseException, so ``except Exception`` in the code under test
    does not swallow it)."""


class Outcome(Exception):
    """A case's verdict, raised out of the step that decided it."""

    def __init__(self, kind: str, step: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.step, self.detail = kind, step, detail


def describe(exc: BaseException) -> str:
    """``Type at file:line function: message`` with the innermost frame of this project's package."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = next((f"{_package_path(f.filename)}:{f.lineno} {f.name}" for f in reversed(tb)
                  if "puffin_explorer" in f.filename), "?")
    return f"{type(exc).__name__} at {where}: {str(exc)[:200]}"


#: Warnings no user may see, as ``warnings.filterwarnings`` arguments: one raised during a case fails it.
FAILING_WARNINGS = ({"module": "puffin_explorer"}, {"message": "AutoDateLocator"})


def run_watched(harness, case, index: int) -> dict:
    """``harness.run(case, index)`` with every warning of :data:`FAILING_WARNINGS` counted as a failure.

    The warnings are recorded, not raised: a card that catches an exception to draw the rest of itself
    would hide a raised one.  The first fails a passing case (``crash`` in step ``warning``); other
    warnings are shown as usual."""
    with warnings.catch_warnings(record=True) as caught:
        for spec in FAILING_WARNINGS:
            warnings.filterwarnings("always", **spec)  # every time, not once per place in the worker
        record = harness.run(case, index)
    bad = []
    for w in caught:
        if "AutoDateLocator" in str(w.message) or "puffin_explorer" in Path(w.filename).parts:
            bad.append(w)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if bad and record.get("outcome") in PASSING:
        w = bad[0]
        record.update(outcome="crash", step="warning",
                      detail=f"{w.category.__name__} at {_package_path(w.filename)}:{w.lineno}: {str(w.message)[:200]}")
    return record


def _cpu_seconds(pid: int) -> float:
    """CPU time (user and system) a process has used so far; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _package_path(filename: str) -> str:
    """``iceberg/table.py`` for ``.../puffin_explorer/iceberg/table.py`` (two modules share a file name)."""
    parts = Path(filename).parts
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("puffin_explorer") + 1:]) \
        if "puffin_explorer" in parts else Path(filename).name


def _worker(conn, harness, time_limit: float, mem_limit: int) -> None:
    import resource

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    page = resource.getpagesize()
    warm = getattr(harness, "warm", None)
    if warm is not None:
        warm()  # the runtimes' one-time reservations (an allocator's arena, a pool's threads) before any case

    def limit_case() -> None:
        # The limit is what a case may add to the worker's address space, from where the case starts: a
        # parent that reserved a lot (a test runner that loaded pyarrow, DuckDB, Spark clients) must not
        # leave a case no room at all, and neither may the address space earlier cases left reserved but
        # not resident (allocator arenas of threads, a heap kept at its high-water mark).
        with open("/proc/self/statm") as fh:
            size = int(fh.read().split()[0]) * page
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        soft = size + mem_limit if hard == resource.RLIM_INFINITY else min(size + mem_limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    done = 0

    def on_alarm(signum, frame):
        raise Stall()

    signal.signal(signal.SIGPROF, on_alarm)
    while True:
        try:
            index = conn.recv()
        except EOFError:
            return
        if index is None:
            return
        fatal = False
        try:
            case = harness.prepare(index)
        except Exception as exc:  # noqa: BLE001 - the generator itself failed
            conn.send({"case": index, "outcome": "crash", "step": "harness", "detail": describe(exc),
                       "cpu": 0.0, "wall": 0.0, "retiring": False})
            continue
        if mem_limit:
            limit_case()
        t0, c0 = time.perf_counter(), time.process_time()
        signal.setitimer(signal.ITIMER_PROF, time_limit)
        try:
            record = run_watched(harness, case, index)
        except Stall as exc:
            where = describe(exc).split(": ")[0].partition(" at ")[2]
            record = {"case": index, "outcome": "stall", "step": "",
                      "detail": f"over {time_limit} s of CPU (interrupted at {where})"}
        except MemoryError as exc:
            record = {"case": index, "outcome": "memory", "step": "", "detail": describe(exc)}
            fatal = True
        except Exception as exc:  # noqa: BLE001 - the harness itself failed
            record = {"case": index, "outcome": "crash", "step": "harness", "detail": describe(exc)}
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        record["cpu"] = time.process_time() - c0
        record["wall"] = time.perf_counter() - t0
        try:  # what the worker holds in memory after the case: growth here across cases would be a leak
            with open("/proc/self/statm") as fh:
                record["worker_rss_mb"] = round(int(fh.read().split()[1]) * page / (1 << 20), 1)
        except (OSError, IndexError, ValueError):
            pass
        try:
            harness.release(case)
        except Exception:  # noqa: BLE001 - cleaning up is best effort
            pass
        done += 1
        # A fresh worker after MemoryError or an interrupted step (their state is not trusted), and now and then.
        record["retiring"] = fatal or record["outcome"] == "stall" or done >= CASES_PER_WORKER
        try:
            conn.send(record)
        except (MemoryError, OSError):
            return
        if record["retiring"]:
            return


@dataclass
class Report:
    """The tally of a run: counts per outcome, the failing records, classes of failure, the slowest cases."""

    outcomes: tuple = ("ok", "documented", "crash", "stall", "memory")
    counts: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    slowest: list = field(default_factory=list)  # (cpu, record)
    slowest_steps: list = field(default_factory=list)  # (cpu, step, case): harnesses that time each operation
    by_class: dict = field(default_factory=dict)  # (outcome, step, exception head) -> count
    cases: int = 0
    cpu: float = 0.0  # CPU seconds of the user paths, all cases
    worker_rss_mb: float = 0.0  # the largest resident size of a worker after a case
    seconds: float = 0.0
    interrupted: bool = False

    def __post_init__(self) -> None:
        self.counts = {k: 0 for k in self.outcomes}

    def add(self, rec: dict) -> None:
        self.cases += 1
        self.cpu += rec.get("cpu", 0.0)
        self.worker_rss_mb = max(self.worker_rss_mb, rec.get("worker_rss_mb", 0.0))
        self.counts[rec["outcome"]] = self.counts.get(rec["outcome"], 0) + 1
        if rec["outcome"] not in PASSING:
            self.failures.append(rec)
            key = f"{rec['outcome']} {rec.get('step', '')} {rec.get('detail', '').split(':')[0]}"
            self.by_class[key] = self.by_class.get(key, 0) + 1
        self.slowest.append((rec.get("cpu", 0.0), rec))
        self.slowest = sorted(self.slowest, key=lambda x: -x[0])[:5]
        if rec.get("slowest_step"):
            self.slowest_steps.append((rec["slowest_step"][1], rec["slowest_step"][0], rec.get("case")))
            self.slowest_steps = sorted(self.slowest_steps, key=lambda x: -x[0])[:5]

    @property
    def failed(self) -> int:
        """Cases whose outcome is not ok or documented."""
        return sum(n for k, n in self.counts.items() if k not in PASSING)

    def to_dict(self) -> dict:
        return {"cases": self.cases, "seconds": round(self.seconds, 1), "interrupted": self.interrupted,
                "cpu_per_case": round(self.cpu / max(1, self.cases), 3), "worker_rss_mb": self.worker_rss_mb,
                "outcomes": self.counts,
                "classes": self.by_class, "slowest": [dict(r, cpu=round(c, 3)) for c, r in self.slowest],
                "slowest_steps": [{"cpu": c, "step": s, "case": i} for c, s, i in self.slowest_steps],
                "failures": self.failures[:50]}


def run_pool(harness: Any, cases: int, workers: int = 2, time_limit: float = 5.0, mem_limit: int = 2 * GIB,
             start: int = 0, save: Optional[str] = None,
             progress: Optional[Callable[[Report], None]] = None) -> Report:
    """Run the harness's cases ``start .. start+cases-1`` on ``workers`` processes; return the tally."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    harness.preload()
    ctx = mp.get_context("fork")
    report = Report(tuple(harness.outcomes))
    t_start = time.perf_counter()
    todo = iter(range(start, start + cases))
    # For a worker stuck where the CPU alarm cannot reach it: it is killed once the case has used this much
    # CPU, or ten times as much wall-clock time (on a busy machine a case may wait long for a core).
    backstop = max(30.0, 6 * time_limit)

    def spawn():
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(child, harness, time_limit, mem_limit), daemon=True)
        p.start()
        child.close()
        return {"proc": p, "conn": parent, "case": None, "since": 0.0}

    def feed(w) -> bool:
        index = next(todo, None)
        if index is None:
            w["case"] = None
            w["conn"].send(None)
            return False
        w["case"], w["since"], w["cpu"] = index, time.perf_counter(), _cpu_seconds(w["proc"].pid)
        w["conn"].send(index)
        return True

    pool = [spawn() for _ in range(max(1, workers))]
    active = [w for w in pool if feed(w)]
    try:
        while active and not report.interrupted:
            ready = wait([w["conn"] for w in active], timeout=1.0)
            now = time.perf_counter()
            for w in list(active):
                rec = None
                if w["conn"] in ready:
                    try:
                        rec = w["conn"].recv()
                    except (EOFError, OSError):
                        w["proc"].join(1)
                        code = w["proc"].exitcode
                        # SIGKILL: the kernel's OOM killer; a signal like SIGSEGV (stack overflow) is a crash
                        kind = "memory" if code == -signal.SIGKILL else "crash"
                        rec = {"case": w["case"], "outcome": kind, "step": "", "detail": f"worker died ({code})"}
                elif now - w["since"] > backstop:
                    used = _cpu_seconds(w["proc"].pid) - w["cpu"]
                    if used > backstop or now - w["since"] > 10 * backstop:
                        w["proc"].kill()
                        rec = {"case": w["case"], "outcome": "stall", "step": "",
                               "detail": f"worker unresponsive for {now - w['since']:.0f} s ({used:.0f} s of CPU)"}
                if rec is None:
                    continue
                if "base" not in rec and rec.get("case") is not None:
                    try:
                        rec["base"], rec["mutators"] = harness.name(rec["case"])
                    except Exception:  # noqa: BLE001 - naming the case is best effort
                        pass
                report.add(rec)
                report.seconds = time.perf_counter() - t_start
                if save and rec["outcome"] not in PASSING:
                    harness.save(save, rec)
                if progress is not None:
                    progress(report)
                if rec.pop("retiring", False) or not w["proc"].is_alive() or \
                        rec["outcome"] in ("stall", "memory") or rec.get("detail", "").startswith("worker"):
                    w["proc"].join(2)
                    if w["proc"].is_alive():
                        w["proc"].kill()
                    active.remove(w)
                    nw = spawn()
                    pool.append(nw)
                    if feed(nw):
                        active.append(nw)
                    continue
                if not feed(w):
                    active.remove(w)
    except KeyboardInterrupt:  # keep what ran: the tally so far is still a result
        report.interrupted = True
    finally:
        for w in pool + active:
            if w["proc"].is_alive():
                w["proc"].kill()
        for w in pool:
            w["proc"].join(5)
        if hasattr(harness, "close"):
            harness.close()
    report.seconds = time.perf_counter() - t_start
    return report


# ---------------------------------------------------------------------------- command line
class StepClock:
    """The CPU of each operation of a case: the slowest one, and an outcome for one over ``step_limit``."""

    def __init__(self, step_limit: Optional[float] = None) -> None:
        self.step_limit = step_limit
        self.slowest_step: tuple[float, str] = (0.0, "")

    def timed(self, name: str, cpu: float) -> Optional[Outcome]:
        """Record an operation's CPU; the stall it is when over the limit, else None."""
        if cpu > self.slowest_step[0]:
            self.slowest_step = (cpu, name)
        if self.step_limit is not None and cpu > self.step_limit:
            return Outcome("stall", name, f"{cpu:.2f} s of CPU (limit {self.step_limit} s)")
        return None


def add_pool_arguments(ap: argparse.ArgumentParser, cases: int, time_limit: float = 2.0) -> None:
    """The options every fuzzer takes (``time_limit``: the default ``--time-limit``)."""
    ap.add_argument("--cases", type=int, default=cases)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--time-limit", type=float, default=time_limit,
                    help="CPU seconds of one user operation of a case before the case is a stall")
    ap.add_argument("--case-limit", type=float,
                    help="CPU seconds of a whole case (default: 15 x --time-limit)")
    ap.add_argument("--memory", type=float, default=2.0, help="address-space limit per worker, GiB (0: none)")
    ap.add_argument("--save", help="write each failing case's input and record here")
    ap.add_argument("--json", help="write the report as JSON here")
    ap.add_argument("--replay-case", type=int, help="run one case in this process, with its traceback")


def case_limit(args: argparse.Namespace) -> float:
    """The CPU seconds a whole case may use: ``--case-limit``, or 15 times an operation's."""
    return args.case_limit or 15 * args.time_limit


def run_and_report(args: argparse.Namespace, run: Callable[[Callable[[Report], None]], Report], mode: str,
                   on_progress: Optional[Callable[[Report], None]] = None) -> int:
    """Run ``run(progress)``, print the tally (and write ``--json``); the exit status of the command.
    ``on_progress`` sees the tally after every case."""
    last = [0.0, 0]

    def progress(rep: Report) -> None:
        if on_progress is not None:
            on_progress(rep)
        now = time.perf_counter()
        if now - last[0] > 5 or rep.cases == args.cases:
            last[0] = now
            print(f"\r{rep.cases:,}/{args.cases:,} cases  " + "  ".join(f"{k} {v:,}" for k, v in rep.counts.items()),
                  end="", file=sys.stderr, flush=True)
        if args.json and rep.cases - last[1] >= 1000:  # the figures so far survive a killed run
            last[1] = rep.cases
            with open(args.json, "w") as fh:
                json.dump(rep.to_dict(), fh, indent=1, default=str)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)  # `kill PID` stops a long run like Ctrl-C: with its figures
    rep = run(progress)
    if on_progress is not None:
        on_progress(rep)
    print(file=sys.stderr)
    if rep.interrupted:
        print(f"interrupted after {rep.cases:,} cases", file=sys.stderr)
    print(f"{rep.cases:,} cases in {rep.seconds:.0f} s ({mode}, seed {args.seed}, "
          f"{args.workers} workers, {args.time_limit} s CPU, {args.memory} GiB); "
          f"{rep.cpu / max(1, rep.cases):.2f} s of CPU a case; largest worker after a case {rep.worker_rss_mb:,.0f} MB "
          "resident")
    print("outcomes: " + ", ".join(f"{k} {v:,}" for k, v in rep.counts.items()))
    for key, n in sorted(rep.by_class.items(), key=lambda kv: -kv[1]):
        print(f"  {n:6,}  {key}")
    for cpu, r in rep.slowest[:3]:
        step = f" (slowest step {r['slowest_step'][0]}: {r['slowest_step'][1]:.2f} s)" if r.get("slowest_step") else ""
        print(f"slow: case {r['case']} {cpu:.2f} s CPU{step} {r.get('base', '')} {r.get('mutators', '')}")
    for cpu, step, case in rep.slowest_steps[:3]:
        print(f"slow step: case {case} {step}: {cpu:.2f} s CPU")
    for r in rep.failures[:20]:
        print(f"  case {r['case']}: {r['outcome']} {r.get('base', '')} {r.get('mutators', '')} "
              f"[{r.get('step', '')}] {r.get('detail', '')}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rep.to_dict(), fh, indent=1, default=str)
    if rep.interrupted:
        return 130
    return 0 if not rep.failures else 1
