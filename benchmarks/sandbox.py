"""Sandbox cost: the isolated mode (bubblewrap, the default) next to the old namespace
layers and the opt-in fallback, and next to a bare interpreter, measured side by side in one
run.

    python -m benchmarks.sandbox                  # ~30 s on 2 cores
    python -m benchmarks.sandbox --n 8 --workers 2

Programs: a trivial ``print`` and a HumanEval-style task (a function plus a check()
with asserts), the shape of what an RL rollout executes. For each program, one at a time
(the kinds interleaved, so drift in machine load hits them alike), mean wall ms of:

* ``bare``: ``subprocess.run([sys.executable, "-S", "-c", code])``: interpreter startup
  with no isolation (the sandbox also starts with ``-S``);
* ``unshare``: the same inside ``unshare --pid --net --fork --kill-child --mount-proc``
  (``--user --map-root-user`` when not root): what the sandbox's previous isolation (its
  own namespace code, removed in favour of bubblewrap) cost at least, as a baseline
  command;
* ``fallback``: ``run_python(code)`` in the opt-in fallback (rlimits, audit hook,
  watchdog);
* ``isolated``: ``run_python(code)`` in the default isolated mode.

``iso/unshare`` and ``iso/fallback`` are the ratios of the isolated mode's time to those
(>1: isolation costs more). ``pool/s`` are executions per second through
``SandboxPool(workers).map`` in each mode.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time

from benchmarks.tables import print_table
from envs import sandbox
from envs.sandbox import SandboxJob, SandboxPool, run_python

HUMANEVAL_STYLE = '''
def longest_plateau(values: list[int]) -> int:
    """Length of the longest run of equal adjacent values (0 for an empty list)."""
    best = run = 0
    previous = object()
    for value in values:
        run = run + 1 if value == previous else 1
        previous = value
        best = max(best, run)
    return best


def check(candidate):
    assert candidate([]) == 0
    assert candidate([7]) == 1
    assert candidate([1, 1, 2, 2, 2, 3]) == 3
    assert candidate([5, 5, 5, 5]) == 4
    assert candidate([1, 2, 1, 2]) == 1
    assert candidate(list(range(1000)) + [3] * 50) == 50


check(longest_plateau)
print("passed")
'''

PROGRAMS = {"print": "print('hello')", "humaneval": HUMANEVAL_STYLE}
MODES = {  # sandbox mode -> the environment variables that select it
    "isolated": {sandbox.NAMESPACES_ENV: "1"},
    "fallback": {sandbox.NAMESPACES_ENV: "0", sandbox.ALLOW_HOST_ACCESS_ENV: "1"},
}


def unshare_prefix() -> list[str]:
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *user, "--pid", "--net", "--fork", "--kill-child", "--mount-proc", "--"]


def run_command(command: list[str]) -> float:
    """Seconds for one ``subprocess.run(command)``."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, timeout=60)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"baseline {command[0]} failed: {done.stderr.decode(errors='replace')}")
    return elapsed


class mode_settings:
    """Switch the sandbox's mode (environment variables) for a block, then restore them."""

    def __init__(self, mode: str) -> None:
        self.settings = MODES[mode]

    def __enter__(self) -> None:
        self.saved = {name: os.environ.get(name) for name in self.settings}
        os.environ.update(self.settings)

    def __exit__(self, *exc_info: object) -> None:
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_sandboxed(code: str, mode: str) -> float:
    """Seconds for one ``run_python(code)`` in ``mode``."""
    with mode_settings(mode):
        start = time.perf_counter()
        result = run_python(code)
        elapsed = time.perf_counter() - start
    if not result.ok:
        raise RuntimeError(f"sandboxed run failed ({mode}, {result.reason}): {result.stderr}")
    return elapsed


def time_pool(code: str, n: int, workers: int, mode: str) -> float:
    """Executions per second through ``SandboxPool(workers).map`` (pool start included)."""
    with mode_settings(mode):
        start = time.perf_counter()
        with SandboxPool(workers=workers) as pool:
            results = pool.map([SandboxJob(code)] * n)
        elapsed = time.perf_counter() - start
    failed = [r for r in results if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} pooled runs failed, e.g. {failed[0].reason}: {failed[0].stderr}")
    return n / elapsed


def measure(code: str, n: int, workers: int) -> dict:
    """One-at-a-time runs of the four kinds interleaved, then the pools."""
    bare = [sys.executable, "-S", "-c", code]
    for mode in MODES:
        run_sandboxed(code, mode)  # warm the page cache and the sandbox's probes, untimed
    run_command([*unshare_prefix(), *bare])
    total = dict.fromkeys(("bare_s", "unshare_s", "fallback_s", "isolated_s"), 0.0)
    for _ in range(n):
        total["bare_s"] += run_command(bare) / n
        total["unshare_s"] += run_command([*unshare_prefix(), *bare]) / n
        total["fallback_s"] += run_sandboxed(code, "fallback") / n
        total["isolated_s"] += run_sandboxed(code, "isolated") / n
    return {
        **total,
        "iso_vs_unshare": total["isolated_s"] / total["unshare_s"],
        "iso_vs_fallback": total["isolated_s"] / total["fallback_s"],
        "fallback_pool_per_s": time_pool(code, n, workers, "fallback"),
        "isolated_pool_per_s": time_pool(code, n, workers, "isolated"),
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40, help="executions per program and measurement")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="pool threads")
    args = parser.parse_args(argv)
    if args.n < 1 or args.workers < 1:
        parser.error("--n and --workers must be >= 1")
    layers = {}
    for mode in MODES:
        with mode_settings(mode):
            layers[mode] = sandbox.isolation_layers()  # raises SandboxUnavailableError without bwrap
    print(
        f"teamgym sandbox cost (n={args.n} per measurement, workers={args.workers}, {os.cpu_count()} cpus)\n"
        + "".join(f"{mode}: {', '.join(names)}\n" for mode, names in layers.items())
    )
    rows = [{"program": name, **measure(code, args.n, args.workers)} for name, code in PROGRAMS.items()]
    header = ["program", "bare ms", "unshare ms", "fallback ms", "isolated ms", "iso/unshare", "iso/fallback",
              "fallback pool/s", "isolated pool/s"]  # fmt: skip
    print_table(
        header,
        [
            [row["program"]]
            + [f"{row[key] * 1e3:.1f}" for key in ("bare_s", "unshare_s", "fallback_s", "isolated_s")]
            + [f"{row['iso_vs_unshare']:.2f}x", f"{row['iso_vs_fallback']:.2f}x"]
            + [f"{row['fallback_pool_per_s']:.1f}", f"{row['isolated_pool_per_s']:.1f}"]
            for row in rows
        ],
    )
    print(
        "bare: python -S -c code, no isolation; unshare: the same in fresh pid/net/mount namespaces (the old "
        "layers' floor);\nfallback/isolated: run_python(code) in each sandbox mode. "
        "iso/x = isolated ms / x ms."
    )
    for row in rows:
        for key, value in row.items():
            if key != "program" and not (math.isfinite(value) and value > 0):
                raise RuntimeError(f"{row['program']}: {key} = {value}")
    return rows


if __name__ == "__main__":
    main()
