"""What the peers' scripts measure the same way: seconds inside ``generate`` and the tokens it
generated, per optimiser step. Runs in the peers' virtualenv (torch, transformers).

The libraries do not report generation time in a common form, so ``GenerateMeter`` wraps
``transformers.GenerationMixin.generate`` (which TRL's and CoMLRL's HF paths both call, through
PEFT): every call's wall time, and per row the new tokens up to and including the first end
token (what each library trains on).
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["GenerateMeter"]


class GenerateMeter:
    """Accumulates generate seconds, generated tokens and sequences until ``take()``."""

    def __init__(self, end_token_ids: set[int]) -> None:
        import transformers

        self.end_token_ids = set(end_token_ids)
        self.seconds = 0.0
        self.tokens = 0
        self.samples = 0
        original = transformers.GenerationMixin.generate
        meter = self

        def generate(model: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            out = original(model, *args, **kwargs)
            meter.seconds += time.perf_counter() - started
            prompt = kwargs.get("input_ids", args[0] if args else None)
            sequences = getattr(out, "sequences", out)
            if prompt is not None:
                meter.tokens += meter._count(sequences[:, prompt.shape[1] :])
            return out

        transformers.GenerationMixin.generate = generate
        self._restore = lambda: setattr(transformers.GenerationMixin, "generate", original)

    def close(self) -> None:
        """Put ``generate`` back as it was."""
        self._restore()

    def _count(self, completions: Any) -> int:
        self.samples += completions.shape[0]
        total = 0
        for row in completions.tolist():
            ends = [i for i, token in enumerate(row) if token in self.end_token_ids]
            total += ends[0] + 1 if ends else len(row)
        return total

    def take(self) -> dict[str, float]:
        """Generate seconds, generated tokens and sequences since the last call."""
        out = {"generate_s": self.seconds, "generated_tokens": self.tokens, "samples": self.samples}
        self.seconds, self.tokens, self.samples = 0.0, 0, 0
        return out
