"""Where a rollout's time goes, reported in each step's metrics (``time/generate``, ``time/env``, ...)."""

from __future__ import annotations

import time

__all__ = ["RolloutClock"]


class RolloutClock:
    """Where a rollout's time goes: ``generate`` calls vs everything else (env steps,
    clones, prompts), how many tokens were generated, and the sandbox runs prefetched for
    envs whose turns run programs (their wall time is part of ``time/env``)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.generate_seconds = 0.0
        self.generated_tokens = 0
        self.generate_calls = 0
        self.sandbox_seconds = 0.0
        self.sandbox_runs = 0

    def stats(self) -> dict[str, float]:
        total = time.perf_counter() - self.start
        return {
            "time/generate": self.generate_seconds,
            "time/env": max(0.0, total - self.generate_seconds),
            "time/rollout": total,
            "generated_tokens": float(self.generated_tokens),
            "generate_calls": float(self.generate_calls),
            "time/sandbox": self.sandbox_seconds,
            "sandbox_runs": float(self.sandbox_runs),
        }
