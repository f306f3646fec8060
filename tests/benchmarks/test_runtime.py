"""benchmarks/runtime.py on the tiny model: it runs, prints its table and ratios, and the Ray
runs logged what the local one did (marked ray: skipped without Ray, except in CI)."""

from __future__ import annotations

import re

import pytest

from benchmarks import runtime

pytestmark = pytest.mark.memory(gb=1.5)  # measured 1.1 GB added


@pytest.fixture
def cluster():
    """One private cluster for both Ray runs (each would otherwise start and stop its own:
    seconds of the suite, and the start-up column then leaves the cluster out)."""
    ray = pytest.importorskip("ray")
    ray.shutdown()
    ray.init(address="local", num_cpus=4, include_dashboard=False, object_store_memory=200 * 2**20)
    yield
    ray.shutdown()


@pytest.mark.ray
@pytest.mark.slow
def test_the_runtime_benchmark_compares_local_and_ray_in_one_run(cluster, capsys):
    runtime.main(["--model", "tiny-test", "--steps", "1", "--tasks-per-step", "2", "--threads", "1"])
    out = capsys.readouterr().out
    for row in ("local", "ray, 1 worker", "ray, 2 workers"):
        assert re.search(rf"^ *{re.escape(row)}( +[\d.]+){{6}}$", out, re.MULTILINE), out
    gaps = [float(g) for g in re.findall(r"largest metric difference from local: (\S+)", out)]
    assert len(gaps) == 2 and gaps[0] == 0.0 and gaps[1] < 1e-4, out
    assert re.search(r"rollout throughput, 2 workers / 1 worker: [\d.]+x", out), out
