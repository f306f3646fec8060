"""The conformance checks ``check_env`` runs (``envs/check.py``), one function each, and
``CHECKS``, their table: what each one asserts is in ``envs.check``'s docstring.

Each check takes an ``EnvUnderCheck`` (how to build the env for one team variant), returns
what it saw, and fails by ``AssertionError`` or skips by ``Skip``. The modules:

* ``subject``: ``EnvUnderCheck``, ``Skip`` and ``step_texts``, which the checks share;
* ``api``: PettingZoo's tools, the info contract, copies, determinism, the episode's rules,
  the oracle;
* ``hostile_input``: invalid, non-text, hostile and fuzzed actions;
* ``splits``: the train / test split checks."""

from __future__ import annotations

from collections.abc import Callable

from envs.checks.api import (
    KNOWN_TEXT_WARNINGS,
    check_api,
    check_clone,
    check_clone_pickle_replay,
    check_determinism,
    check_independent_objects,
    check_info_contract,
    check_oracle,
    check_parallel_api,
    check_render,
    check_reward_mixing,
    check_seed,
    check_truncation,
    check_unseeded_reset,
)
from envs.checks.hostile_input import (
    HOSTILE_TEXTS,
    NON_TEXT_ACTIONS,
    check_fuzzed_text,
    check_hostile_text,
    check_invalid_penalize,
    check_invalid_terminate,
    check_non_text_actions,
)
from envs.checks.splits import check_split_disjoint, check_split_seeds
from envs.checks.subject import EnvUnderCheck, Skip, step_texts

__all__ = [
    "CHECKS",
    "EnvUnderCheck",
    "HOSTILE_TEXTS",
    "KNOWN_TEXT_WARNINGS",
    "NON_TEXT_ACTIONS",
    "Skip",
    "step_texts",
]

CHECKS: dict[str, Callable[[EnvUnderCheck], str]] = {
    "api": check_api,
    "seed": check_seed,
    "parallel_api": check_parallel_api,
    "render": check_render,
    "info_contract": check_info_contract,
    "independent_objects": check_independent_objects,
    "clone": check_clone,
    "clone_pickle_replay": check_clone_pickle_replay,
    "determinism": check_determinism,
    "unseeded_reset": check_unseeded_reset,
    "truncation": check_truncation,
    "reward_mixing": check_reward_mixing,
    "invalid_penalize": check_invalid_penalize,
    "invalid_terminate": check_invalid_terminate,
    "non_text_actions": check_non_text_actions,
    "hostile_text": check_hostile_text,
    "fuzzed_text": check_fuzzed_text,
    "split_seeds": check_split_seeds,
    "split_disjoint": check_split_disjoint,
    "oracle": check_oracle,
}
