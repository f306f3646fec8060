"""One way to seed a process: every global generator a run draws from."""

from __future__ import annotations

import random

import numpy as np
import torch

__all__ = ["seed_everything"]


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (LoRA initialisation and dropout
    draw from torch's; a run's own streams are seeded separately, from its config)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
