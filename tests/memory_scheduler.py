"""pytest-xdist's ``--dist loadfile`` with an eye on the memory pool (``tests/memory_pool.py``).

xdist hands a worker the next module in the queue when the worker is near the end of its
current one. The pool then makes a worker wait while its module does not fit beside what
the others hold, so a heavy module handed out beside another heavy one idles a CPU for
minutes (measured: a vLLM module waited 7 min behind a learning test). This scheduler hands
out instead the first queued module that fits beside the other workers, by the pool's own
figures: what they hold now, or would hold at the heaviest module already handed to them, and
what this worker held when its last module ended. When none fits it hands out the first
(the pool then waits, as before). Order only: every module still runs once, on one worker.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

from tests.memory_pool import DEFAULT_MODULE_GB, MemoryPool

FRESH_WORKER_GB = 0.4
"""A worker that has run no module yet holds about this much (pytest, the test modules' imports)."""


class MemoryAwareScheduling(LoadFileScheduling):
    def __init__(self, config, log, pool: MemoryPool) -> None:
        super().__init__(config, log)
        self.pool = pool

    def _assign_work_unit(self, node) -> None:
        scope = self._first_that_fits(node)
        if scope is not None:
            self.workqueue.move_to_end(scope, last=False)  # the parent pops the queue's head
        super()._assign_work_unit(node)

    def _first_that_fits(self, node) -> str | None:
        declared = self.pool.declarations()
        state = self.pool.snapshot()
        rss = state["idle_rss_gb"]

        def expected(worker: str, module: str) -> float:
            return rss.get(worker, FRESH_WORKER_GB) + declared.get(module, DEFAULT_MODULE_GB)

        me = node.gateway.id
        others = 0.0
        for other, work in self.assigned_work.items():
            worker = other.gateway.id
            if worker == me:
                continue
            unfinished = [module for module, tests in work.items() if not all(tests.values())]
            held = state["held"].get(worker, {}).get("gb", 0.0)
            others += max([held, *(expected(worker, module) for module in unfinished)])
        for module in self.workqueue:
            if others + expected(me, module) <= self.pool.total_gb:
                return module
        return None
