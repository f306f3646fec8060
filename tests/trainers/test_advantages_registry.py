"""The advantage estimators' registry and compute_advantages: names, options, declarations, empty batches."""

from __future__ import annotations

import numpy as np
import pytest

from tests.trainers.advantages_helpers import gigpo_batch, grpo_batch
from trainers.advantages import ADVANTAGE_ESTIMATORS, compute_advantages, grpo, register_estimator

ESTIMATOR_NAMES = ["grpo", "rloo", "at_grpo", "per_agent", "gigpo", "matpo", "tree", "rae"]


# ------------------------------------------------------------------------------------ registry


def test_registry_has_exactly_the_eight_estimators():
    assert list(ADVANTAGE_ESTIMATORS) == ESTIMATOR_NAMES


def test_typo_raises_key_error_listing_the_names():
    with pytest.raises(KeyError) as info:
        compute_advantages(grpo_batch(), "gipgo")
    assert "gipgo" in str(info.value)
    assert all(name in str(info.value) for name in ESTIMATOR_NAMES)


def test_unknown_option_raises_type_error_naming_it():
    with pytest.raises(TypeError, match="omgea"):
        compute_advantages(gigpo_batch(), "gigpo", omgea=2.0)
    with pytest.raises(TypeError, match="scale"):
        compute_advantages(grpo_batch(), "rloo", scale="none")


def test_estimators_declare_rollouts_roles_and_scales():
    assert ADVANTAGE_ESTIMATORS["gigpo"].rollouts == ("plain",)
    assert ADVANTAGE_ESTIMATORS["at_grpo"].rollouts == ("tree",)
    assert ADVANTAGE_ESTIMATORS["gigpo"].scale_kwargs("none") == {"norm": "mean_norm"}
    rloo_spec = ADVANTAGE_ESTIMATORS["rloo"]
    assert rloo_spec.scales == ("none",) and rloo_spec.scale_kwargs("none") == {}
    matpo_spec = ADVANTAGE_ESTIMATORS["matpo"]
    assert matpo_spec.required_role({}) == "planner"
    assert matpo_spec.required_role({"planner_role": "boss"}) == "boss"
    assert ADVANTAGE_ESTIMATORS["grpo"].required_role({}) is None


def test_register_estimator_refuses_a_declared_option_the_function_lacks():
    def mine(samples, *, scale: str = "group"):
        return grpo(samples, scale=scale)

    with pytest.raises(ValueError, match="planner_role"):
        register_estimator("mine", mine, role_option="planner_role")
    with pytest.raises(ValueError, match="rollouts"):
        register_estimator("mine", mine, rollouts=("beam",))
    assert "mine" not in ADVANTAGE_ESTIMATORS
    with pytest.raises(ValueError, match="already registered"):
        register_estimator("grpo", mine)


def test_compute_advantages_passes_options():
    got = compute_advantages(grpo_batch(), "grpo", scale="none").advantages
    assert np.array_equal(got, grpo(grpo_batch(), scale="none").advantages)


@pytest.mark.parametrize("name", ESTIMATOR_NAMES)
def test_every_estimator_handles_an_empty_batch(name):
    result = compute_advantages([], name)
    assert result.advantages.shape == (0,) and result.weights.shape == (0,)
    assert result.diagnostics["num_samples"] == 0
