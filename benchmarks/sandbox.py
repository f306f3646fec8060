"""Sandbox throughput: ``envs.sandbox`` pool vs one at a time, and per-run overhead vs a bare
``subprocess.run([sys.executable, "-c", code])``, measured side by side in one run.

    python -m benchmarks.sandbox                  # ~15 s on 2 cores
    python -m benchmarks.sandbox --n 8 --workers 2
    python -m benchmarks.sandbox --fallback       # the no-namespaces layers

Programs: a trivial ``print`` and a HumanEval-style task (a function plus a check()
with asserts), the shape of what an RL rollout executes. For each program:

* ``bare ms``: mean wall time of ``subprocess.run([sys.executable, "-c", code])``,
  one at a time (the baseline); ``bare -S ms``: the same with ``-S`` (no ``site``
  processing), the interpreter startup the sandbox itself uses, so ``sandbox ms`` minus
  it is the cost of the isolation layers alone. The one-at-a-time runs of the three
  kinds are interleaved, so drift in machine load hits them alike;
* ``sandbox ms``: mean wall time of ``run_python(code)``, one at a time; ``overhead`` =
  sandbox ms / bare ms (>1: the sandbox is slower);
* ``seq/s`` and ``pool/s``: executions per second one at a time and through
  ``SandboxPool(workers).map``; ``speed-up`` = pool/s / seq/s.

With namespaces, a run's startup includes creating a network namespace, which now and
then waits for the kernel's asynchronous cleanup of earlier ones (tens of ms): the
one-at-a-time figures are noisier than the fallback's, and the pool hides that wait.
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


def run_bare(code: str, flags: tuple[str, ...] = ()) -> float:
    """Seconds for one ``subprocess.run([sys.executable, *flags, "-c", code])``."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, timeout=60)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"baseline failed: {done.stderr.decode(errors='replace')}")
    return elapsed


def run_sandboxed(code: str) -> float:
    """Seconds for one ``run_python(code)``."""
    start = time.perf_counter()
    result = run_python(code)
    elapsed = time.perf_counter() - start
    if not result.ok:
        raise RuntimeError(f"sandboxed run failed ({result.reason}): {result.stderr}")
    return elapsed


def time_pool(code: str, n: int, workers: int) -> float:
    """Executions per second through ``SandboxPool(workers).map`` (pool start included)."""
    start = time.perf_counter()
    with SandboxPool(workers=workers) as pool:
        results = pool.map([SandboxJob(code)] * n)
    elapsed = time.perf_counter() - start
    failed = [r for r in results if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} pooled runs failed, e.g. {failed[0].reason}: {failed[0].stderr}")
    return n / elapsed


def measure(code: str, n: int, workers: int) -> dict:
    """One-at-a-time runs of the three kinds interleaved (machine noise hits all alike),
    then the pool."""
    run_python(code)  # warm the page cache and the sandbox's probes, untimed
    bare = bare_nosite = seq = 0.0
    for _ in range(n):
        bare += run_bare(code) / n
        bare_nosite += run_bare(code, ("-S",)) / n
        seq += run_sandboxed(code) / n
    pool_rate = time_pool(code, n, workers)
    return {
        "bare_s": bare,
        "bare_nosite_s": bare_nosite,
        "sandbox_s": seq,
        "overhead": seq / bare,
        "seq_per_s": 1.0 / seq,
        "pool_per_s": pool_rate,
        "speedup": pool_rate * seq,
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40, help="executions per program and measurement")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="pool threads")
    parser.add_argument("--fallback", action="store_true", help="force the fallback (no namespaces)")
    args = parser.parse_args(argv)
    if args.n < 1 or args.workers < 1:
        parser.error("--n and --workers must be >= 1")

    previous = os.environ.get(sandbox.NAMESPACES_ENV)
    if args.fallback:
        os.environ[sandbox.NAMESPACES_ENV] = "0"
    try:
        layers = sandbox.isolation_layers()
        namespaces = "pidns" in layers
        print(
            f"teamgym sandbox throughput (n={args.n} per measurement, workers={args.workers}, "
            f"{os.cpu_count()} cpus)\nisolation: {'namespaces' if namespaces else 'fallback'}: "
            f"{', '.join(layers)}\n"
        )
        rows = []
        for name, code in PROGRAMS.items():
            rows.append({"program": name, **measure(code, args.n, args.workers)})
    finally:
        if args.fallback:
            if previous is None:
                os.environ.pop(sandbox.NAMESPACES_ENV, None)
            else:
                os.environ[sandbox.NAMESPACES_ENV] = previous

    header = ["program", "bare ms", "bare -S ms", "sandbox ms", "overhead", "seq/s", "pool/s", "speed-up"]
    print_table(
        header,
        [
            [
                row["program"],
                f"{row['bare_s'] * 1e3:.1f}",
                f"{row['bare_nosite_s'] * 1e3:.1f}",
                f"{row['sandbox_s'] * 1e3:.1f}",
                f"{row['overhead']:.2f}x",
                f"{row['seq_per_s']:.1f}",
                f"{row['pool_per_s']:.1f}",
                f"{row['speedup']:.2f}x",
            ]
            for row in rows
        ],
    )
    print(
        "overhead = sandbox ms / bare ms (bare: subprocess.run([sys.executable, '-c', code]), which "
        "also runs site and .pth hooks;\nthe sandbox starts with -S, so compare with bare -S ms for the "
        "layers' own cost). speed-up = pool/s / seq/s."
    )
    for row in rows:
        for key, value in row.items():
            if key != "program" and not (math.isfinite(value) and value > 0):
                raise RuntimeError(f"{row['program']}: {key} = {value}")
    return rows


if __name__ == "__main__":
    main()
