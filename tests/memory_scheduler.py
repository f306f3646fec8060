"""pytest-xdist's ``--dist loadfile`` with an eye on the memory pool (``tests/memory_pool.py``)
and on the long modules.

xdist hands a worker its next module as soon as its current one has at most two tests left,
so a worker starting a one-test module (a learning test) is handed its next one at once. Two
things then go wrong. The pool makes a worker wait while its module does not fit beside what
the others hold, so a heavy module handed out beside another heavy one idles a CPU for
minutes (measured: a vLLM module waited 7 min behind a learning test). And a long module
queued behind another long one on the same worker runs after it while the other worker
may run out of work. This scheduler hands out instead:

- to a worker still busy with a long module (``LONG_MODULES``), the first queued module that
  is not long and fits: the long ones wait for a worker that is about to be free;
- otherwise the first queued module that fits beside the other workers, by the pool's own
  figures: what they hold now, or would hold at the heaviest module already handed to them,
  and what this worker held when its last module ended.

When none fits it hands out the first (the pool then waits, as before). Order only: every
module still runs once, on one worker.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

from tests.memory_pool import DEFAULT_MODULE_GB, MemoryPool

LONG_MODULES = (
    "tests/trainers/test_game_learning_referential.py",
    "tests/trainers/test_game_learning_tictactoe.py",
    "tests/trainers/test_at_grpo_vllm.py",
    "tests/trainers/runtime/test_ray.py",
    "tests/benchmarks/test_evaluate_vllm.py",
    "tests/agents/test_vllm.py",
    "tests/trainers/test_at_grpo.py",
    "tests/trainers/test_at_grpo_resume.py",
    "tests/benchmarks/test_evaluate.py",
    "tests/envs/alfworld/test_pddl_differential.py",
    "tests/envs/test_conformance.py",
)
"""The modules that take longest (measured: docs/testing.md), first in the queue
(``tests/conftest.py`` sorts the collection by it), so that under ``-n`` no long module starts
last while the other workers idle. Order: the two learning tests (longest) first, then the
heavy modules (a vLLM engine or a Ray cluster, 6-6.5 GB), which fit only beside light work:
queued ahead of the light long ones, a worker takes them whenever the others run light work
(left for the end, they ran one after another while the other worker idled: 11 of CI's 33
minutes on 2026-11-27). Among the heavy ones, those whose engines live in other processes
(the training command's, Ray's actors) come before the two that load vLLM into the worker
itself: a worker keeps ~1 GB more after those (vLLM's code), and then no heavy module fits
beside the other worker's light one, so the heavy ones left ran last, one after the other
(test_ray waited 249 s for test_vllm in a run on 2026-11-28). Order only: a module missing
here runs all the same."""

FRESH_WORKER_GB = 0.4
"""A worker that has run no module yet holds about this much (pytest, the test modules' imports)."""


class MemoryAwareScheduling(LoadFileScheduling):
    def __init__(self, config, log, pool: MemoryPool) -> None:
        super().__init__(config, log)
        self.pool = pool

    def _assign_work_unit(self, node) -> None:
        scope = self._next_module(node)
        if scope is not None:
            self.workqueue.move_to_end(scope, last=False)  # the parent pops the queue's head
        super()._assign_work_unit(node)

    def _next_module(self, node) -> str | None:
        """The queued module to hand ``node`` (module docstring); None when the queue is empty."""
        declared = self.pool.declarations()
        state = self.pool.snapshot()
        rss = state["idle_rss_gb"]

        def expected(worker: str, module: str) -> float:
            return rss.get(worker, FRESH_WORKER_GB) + declared.get(module, DEFAULT_MODULE_GB)

        me = node.gateway.id
        others = 0.0
        busy_with_long = False
        for other, work in self.assigned_work.items():
            unfinished = [module for module, tests in work.items() if not all(tests.values())]
            if other.gateway.id == me:
                busy_with_long = any(module in LONG_MODULES for module in unfinished)
                continue
            worker = other.gateway.id
            held = state["held"].get(worker, {}).get("gb", 0.0)
            others += max([held, *(expected(worker, module) for module in unfinished)])
        # a busy worker gets a long module only when nothing else is left (the queue must drain)
        queue = [m for m in self.workqueue if not (busy_with_long and m in LONG_MODULES)]
        queue = queue or list(self.workqueue)
        for module in queue:
            if others + expected(me, module) <= self.pool.total_gb:
                return module
        return queue[0] if queue else None
