"""The registry: versioned ids, latest-version resolution, lazy entry points, conflicts."""

from __future__ import annotations

import sys

import pytest

import envs
from envs import registration
from envs.planning.plan_path.env import PlanPathEnv


@pytest.fixture
def scratch_ids():
    """Forget every id a test registers under the 'scratch/' namespace."""
    yield
    for env_id in [i for i in registration._REGISTRY if i.startswith("scratch/")]:
        del registration._REGISTRY[env_id]


def test_make_without_version_gives_latest(scratch_ids):
    envs.register("scratch/path-v0", "envs.planning.plan_path.env:PlanPathEnv", max_cycles=3)
    envs.register("scratch/path-v2", "envs.planning.plan_path.env:PlanPathEnv", max_cycles=7)
    envs.register("scratch/path-v1", "envs.planning.plan_path.env:PlanPathEnv", max_cycles=5)
    assert envs.spec("scratch/path").id == "scratch/path-v2"
    env = envs.make("scratch/path")
    assert isinstance(env, PlanPathEnv) and env.max_cycles == 7
    assert env.spec.id == "scratch/path-v2" and env.spec.version == 2 and env.spec.name == "scratch/path"
    assert envs.make("scratch/path-v0").max_cycles == 3


def test_kwargs_merge_spec_then_caller(scratch_ids):
    envs.register(
        "scratch/hard-v0",
        "envs.planning.plan_path.env:PlanPathEnv",
        kwargs={"difficulty": "hard", "alpha": 0.5},
    )
    env = envs.make("scratch/hard", alpha=2.0, max_cycles=4)
    assert env.difficulty == "hard" and env.alpha == 2.0 and env.max_cycles == 4


def test_identical_reregistration_is_a_noop_conflicting_one_raises(scratch_ids):
    first = envs.register("scratch/x-v0", "envs.planning.plan_path.env:PlanPathEnv")
    assert envs.register("scratch/x-v0", "envs.planning.plan_path.env:PlanPathEnv") is first
    with pytest.raises(ValueError, match="already registered.*scratch/x-v1"):
        envs.register("scratch/x-v0", "envs.planning.sudoku.env:SudokuEnv")
    with pytest.raises(ValueError, match="already registered"):
        envs.register("scratch/x-v0", "envs.planning.plan_path.env:PlanPathEnv", kwargs={"alpha": 0.0})
    with pytest.raises(ValueError, match="already registered"):
        envs.register("plan_path-v0", "somewhere.else:Env")


@pytest.mark.parametrize("bad", ["Sokoban-v0", "sokoban-v", "my org/x-v0", "-v0", "a/b/c-v0", ""])
def test_malformed_ids_are_rejected(bad):
    with pytest.raises(ValueError, match="Malformed env id"):
        envs.spec(bad)


def test_register_needs_version_and_module_colon_class(scratch_ids):
    with pytest.raises(ValueError, match="versioned id"):
        envs.register("scratch/noversion", "a.b:C")
    with pytest.raises(ValueError, match="package.module:ClassName"):
        envs.register("scratch/y-v0", "a.b.C")
    with pytest.raises(ValueError, match="max_cycles"):
        envs.register("scratch/y-v0", "a.b:C", max_cycles=0)


def test_unknown_id_lists_close_matches():
    with pytest.raises(KeyError, match="Did you mean 'sokoban-v2', 'sokoban-v1'"):
        envs.make("sokoban-v9")
    with pytest.raises(KeyError, match="Registered ids:"):
        envs.make("nothing_like_it")


def test_entry_point_import_errors_surface(scratch_ids):
    envs.register("scratch/broken-v0", "no_such_module_xyz:Env")
    with pytest.raises(ModuleNotFoundError):
        envs.make("scratch/broken")
    envs.register("scratch/noattr-v0", "envs.core:NoSuchClass")
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchClass'"):
        envs.make("scratch/noattr")


def test_callable_entry_point(scratch_ids):
    envs.register("scratch/fn-v0", lambda **kw: PlanPathEnv(**kw))
    assert isinstance(envs.make("scratch/fn", team="single"), PlanPathEnv)


def test_registered_ids_sorted_and_contains_builtins():
    ids = envs.registered_ids()
    assert ids == sorted(ids)
    assert {"sokoban-v0", "plan_path-v0", "sudoku-v0"} <= set(ids)


def test_env_modules_load_lazily():
    # String entry points: the registry holds strings, not classes.
    assert all(isinstance(s.entry_point, str) for s in registration._REGISTRY.values() if "/" not in s.id)
    assert "envs.registration" in sys.modules


def test_module_prefix_imports_the_registering_module_first(scratch_ids, tmp_path, monkeypatch):
    (tmp_path / "scratch_envs_mod.py").write_text(
        "import envs\n"
        "envs.register('scratch/imported-v0', 'envs.planning.plan_path.env:PlanPathEnv', max_cycles=4)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "scratch/imported-v0" not in envs.registered_ids()
    env = envs.make("scratch_envs_mod:scratch/imported")
    assert env.spec.id == "scratch/imported-v0" and env.max_cycles == 4
    assert envs.spec("scratch_envs_mod:scratch/imported-v0").id == "scratch/imported-v0"
    with pytest.raises(envs.EnvModuleError, match="no module 'no_such_module_xyz' on the Python path"):
        envs.make("no_such_module_xyz:scratch/imported")
    (tmp_path / "needs_dep_mod.py").write_text("import no_such_dependency_xyz\n")
    with pytest.raises(envs.EnvModuleError, match="needs 'no_such_dependency_xyz', which is not installed"):
        envs.spec("needs_dep_mod:scratch/x")
    (tmp_path / "buggy_env_mod.py").write_text("1 / 0\n")
    with pytest.raises(envs.EnvModuleError, match="raised ZeroDivisionError"):
        envs.spec("buggy_env_mod:scratch/x")
    sys.modules.pop("scratch_envs_mod", None)


def test_registered_names_drop_the_versions():
    names = envs.registered_names()
    assert {"sokoban", "plan_path", "sudoku", "math", "code"} <= set(names)
    assert names == sorted(names) and not any(name.endswith(("-v0", "-v1")) for name in names)


def test_metadata_names_the_version_that_was_made():
    # one class serves plan_path-v0 and -v1, and both said "plan_path_v0" (issue 52, item 5)
    assert envs.make("plan_path-v1").metadata["name"] == "plan_path_v1"
    assert envs.make("plan_path-v0").metadata["name"] == "plan_path_v0"
    assert envs.make("sokoban").metadata["name"] == f"sokoban_v{envs.spec('sokoban').version}"
    assert envs.make("sokoban-v1").clone().metadata["name"] == "sokoban_v1"
    assert type(envs.make("sokoban-v1")).metadata["name"] == "sokoban_v0"  # the class is not changed
