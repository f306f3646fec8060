"""Environment registry: ``register``, ``make``, ``spec``, ``registered_ids``.

Ids are versioned like Gymnasium's: ``sokoban-v0``, optionally with a namespace
(``myorg/maze-v2``). ``make("sokoban")`` resolves to the highest registered version.
Entry points are ``"package.module:ClassName"`` strings, imported only when an env is
made, so ``import envs`` stays light (no torch, no heavy game data).

Registering an id again with the same entry point and kwargs is a no-op (re-importing a
user module is harmless); registering it with a *different* entry point or kwargs raises,
so two packages can never silently shadow each other.

Like Gymnasium, ``"some.module:env-id"`` first imports ``some.module`` (which registers its
envs) and then looks up ``env-id``; command lines use it for third-party envs, e.g.
``--env mylab.envs:mylab/guess``.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EnvModuleError",
    "EnvSpec",
    "import_env_module",
    "register",
    "make",
    "spec",
    "registered_ids",
    "registered_names",
    "parse_env_id",
]

_ID_PATTERN = re.compile(
    r"^(?:(?P<namespace>[a-z0-9][a-z0-9_.-]*)/)?(?P<name>[a-z][a-z0-9_]*)(?:-v(?P<version>\d+))?$"
)

EntryPoint = str | Callable[..., Any]


@dataclass(frozen=True)
class EnvSpec:
    """What ``make`` needs to build one registered environment.

    Attributes:
        id: Full versioned id, e.g. ``"sokoban-v0"``.
        entry_point: ``"module:Class"`` string (imported lazily) or a callable.
        kwargs: Default constructor keyword arguments; ``make(id, **kw)`` overrides them.
        max_cycles: Number of full turn cycles before truncation for this id (``None``: the
            env class's ``DEFAULT_MAX_CYCLES``; see ``default_max_cycles``).
    """

    id: str
    entry_point: EntryPoint
    kwargs: dict[str, Any] = field(default_factory=dict)
    max_cycles: int | None = None

    @property
    def name(self) -> str:
        """The id without version, e.g. ``"sokoban"`` or ``"myorg/maze"``."""
        namespace, name, _ = parse_env_id(self.id)
        return f"{namespace}/{name}" if namespace else name

    @property
    def version(self) -> int:
        """The ``N`` of ``-vN``."""
        version = parse_env_id(self.id)[2]
        assert version is not None  # register() refuses unversioned ids
        return version

    @property
    def default_max_cycles(self) -> int | None:
        """The horizon ``make()`` gives when the caller sets none: the registration's
        ``max_cycles``, else the env class's ``DEFAULT_MAX_CYCLES`` (None: neither)."""
        if self.max_cycles is not None:
            return self.max_cycles
        return getattr(_load_entry_point(self.entry_point), "DEFAULT_MAX_CYCLES", None)

    @property
    def teams(self) -> Mapping[str, tuple[str, ...]] | None:
        """The env class's team variants (variant -> roles in turn order), read without building
        an env (None: the entry point declares no ``TEAMS``, e.g. a factory function)."""
        teams = getattr(_load_entry_point(self.entry_point), "TEAMS", None)
        return teams if isinstance(teams, Mapping) else None

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The env class's ``metadata`` (suite, name...), read without building an env, so an
        env whose optional dependency is missing still shows in its suite ({} for a factory)."""
        metadata = getattr(_load_entry_point(self.entry_point), "metadata", None)
        return metadata if isinstance(metadata, Mapping) else {}

    @property
    def training(self):
        """The env class's ``TrainingPreset`` (``TextAECEnv.TRAINING``; the defaults when the
        entry point declares none, e.g. a factory function)."""
        from envs.core import TrainingPreset

        preset = getattr(_load_entry_point(self.entry_point), "TRAINING", None)
        return preset if isinstance(preset, TrainingPreset) else TrainingPreset()

    def make(self, **kwargs: Any):
        """Build the env: spec kwargs, then ``max_cycles``, then the caller's kwargs."""
        constructor = _load_entry_point(self.entry_point)
        merged = dict(self.kwargs)
        if self.max_cycles is not None:
            merged.setdefault("max_cycles", self.max_cycles)
        merged.update(kwargs)
        env = constructor(**merged)
        # Like Gymnasium: the env knows which spec made it (used in task ids and logs).
        try:
            env.spec = self
        except AttributeError:  # pragma: no cover - exotic envs with slots
            pass
        _name_the_version(env, self.version)
        return env


def _name_the_version(env: Any, version: int) -> None:
    """Make ``metadata["name"]`` say the version that was made: one class often serves several
    versions (``sokoban-v0`` and ``-v1`` differ in prompts only), and its class-level
    ``"sokoban_v0"`` would name v0 for both. A name without a ``_v<N>`` suffix is left alone."""
    metadata = getattr(env, "metadata", None)
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if isinstance(name, str) and (match := re.fullmatch(r"(.+)_v\d+", name)):
        if name != f"{match[1]}_v{version}":
            env.metadata = {**metadata, "name": f"{match[1]}_v{version}"}  # this instance's, not the class's


_REGISTRY: dict[str, EnvSpec] = {}


class EnvModuleError(ImportError):
    """A module that should register envs cannot be imported; the message is one line that
    names the module and the fix."""


def import_env_module(module_name: str) -> None:
    """Import the module that registers a third-party env (``"module:id"``, ``--imports``).

    Raises:
        EnvModuleError: The module is not on ``sys.path``, or importing it raised: one line
            naming the module and the fix, instead of a long traceback.
    """
    try:
        importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is None or not (module_name == err.name or module_name.startswith(err.name + ".")):
            raise EnvModuleError(
                f"importing env module {module_name!r} failed: it needs {err.name!r}, which is not "
                f"installed (pip install it, or run python -c 'import {module_name}' to see where)"
            ) from err
        raise EnvModuleError(
            f"no module {module_name!r} on the Python path: run from the directory that holds "
            f"{module_name.replace('.', '/')}.py, or add that directory to PYTHONPATH "
            f"(PYTHONPATH=path/to/dir python -m ...)"
        ) from None
    except Exception as err:  # the module's own bug: name it, and how to see the traceback
        raise EnvModuleError(
            f"importing env module {module_name!r} raised {type(err).__name__}: {err} "
            f"(python -c 'import {module_name}' shows the traceback)"
        ) from err


def parse_env_id(env_id: str) -> tuple[str | None, str, int | None]:
    """Split ``"ns/name-vN"`` into ``(namespace, name, version)``; version may be ``None``.

    Raises:
        ValueError: If the id does not follow the pattern (lowercase name, optional
            ``-vN`` suffix, optional ``namespace/`` prefix).
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env id must be a string like 'sokoban-v0', got {env_id!r}")
    match = _ID_PATTERN.match(env_id)
    if match is None:
        raise ValueError(
            f"Malformed env id {env_id!r}: use a lowercase name with an optional version "
            "and namespace, e.g. 'sokoban', 'sokoban-v0' or 'myorg/maze-v1'."
        )
    version = match["version"]
    return match["namespace"], match["name"], int(version) if version is not None else None


def register(
    id: str,  # noqa: A002 - same keyword as gymnasium.register
    entry_point: EntryPoint,
    *,
    kwargs: dict[str, Any] | None = None,
    max_cycles: int | None = None,
) -> EnvSpec:
    """Register an environment under a versioned id.

    Args:
        id: Versioned id, e.g. ``"sokoban-v0"`` or ``"myorg/maze-v1"``. The version is
            required: bump it whenever prompts, grammar, rules or rewards change.
        entry_point: ``"package.module:ClassName"`` (imported lazily by ``make``) or a
            callable returning the env.
        kwargs: Default keyword arguments for the constructor.
        max_cycles: Truncation horizon in full turn cycles for this id, when it differs
            from the env class's ``DEFAULT_MAX_CYCLES`` (a long-horizon variant, say).

    Returns:
        The registered ``EnvSpec``.

    Raises:
        ValueError: If the id is malformed or unversioned, or if it is already registered
            with a different entry point, kwargs or max_cycles.
    """
    namespace, name, version = parse_env_id(id)
    if version is None:
        raise ValueError(
            f"register() needs a versioned id, e.g. '{id}-v0'; versions let results name "
            "exactly which prompts and rewards they used."
        )
    if isinstance(entry_point, str) and ":" not in entry_point:
        raise ValueError(f"entry_point {entry_point!r} must look like 'package.module:ClassName'.")
    if max_cycles is not None and (not isinstance(max_cycles, int) or max_cycles < 1):
        raise ValueError(f"max_cycles must be a positive int, got {max_cycles!r}")
    new = EnvSpec(id=id, entry_point=entry_point, kwargs=dict(kwargs or {}), max_cycles=max_cycles)
    old = _REGISTRY.get(id)
    if old is not None:
        if old == new:
            return old
        raise ValueError(
            f"Env id {id!r} is already registered with entry_point={old.entry_point!r}, "
            f"kwargs={old.kwargs!r}, max_cycles={old.max_cycles!r}. Register your env "
            f"under a new version ('{_versioned(namespace, name, _latest_version(id) + 1)}') "
            "or a namespace ('yourorg/...') instead of overriding it."
        )
    _REGISTRY[id] = new
    return new


def spec(id: str) -> EnvSpec:  # noqa: A002
    """Look up a spec; an id without version resolves to the latest registered version.

    Raises:
        KeyError: With the close matches and the list of registered ids.
        EnvModuleError: ``"module:id"`` names a module that cannot be imported.
    """
    if ":" in id:  # "module:env-id": the module registers the env when imported
        module_name, _, id = id.partition(":")
        import_env_module(module_name)
    namespace, name, version = parse_env_id(id)
    if version is not None:
        if id in _REGISTRY:
            return _REGISTRY[id]
    else:
        versions = [s.version for s in _REGISTRY.values() if parse_env_id(s.id)[:2] == (namespace, name)]
        if versions:
            return _REGISTRY[_versioned(namespace, name, max(versions))]
    known = registered_ids()
    hint = difflib.get_close_matches(id, known, n=3)
    raise KeyError(
        f"No env registered as {id!r}."
        + (f" Did you mean {', '.join(map(repr, hint))}?" if hint else "")
        + f" Registered ids: {', '.join(known) or '(none)'}."
        " Third-party envs must be registered (imported) before make()."
    )


def make(id: str, **kwargs: Any):  # noqa: A002
    """Build a registered environment.

    Args:
        id: ``"sokoban"`` (latest version), ``"sokoban-v0"``, or ``"module:id"`` to import
            the module that registers the env first.
        **kwargs: Override the spec's constructor kwargs (``team``, ``render_mode``,
            ``max_cycles``, sizes, ...).
    """
    return spec(id).make(**kwargs)


def registered_ids() -> list[str]:
    """All registered versioned ids, sorted."""
    return sorted(_REGISTRY)


def registered_names() -> list[str]:
    """The registered ids without their versions (``make(name)`` takes the latest), sorted."""
    return sorted({re.sub(r"-v\d+$", "", id) for id in _REGISTRY})  # noqa: A001


def _versioned(namespace: str | None, name: str, version: int) -> str:
    return f"{namespace + '/' if namespace else ''}{name}-v{version}"


def _latest_version(id: str) -> int:  # noqa: A002
    return spec(re.sub(r"-v\d+$", "", id)).version


def _load_entry_point(entry_point: EntryPoint) -> Callable[..., Any]:
    if callable(entry_point):
        return entry_point
    module_name, _, attr = entry_point.partition(":")
    # No try/except: an import error inside an env module must surface, never be turned
    # into a silently missing env (a pitfall of the reference code).
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError as err:
        raise AttributeError(
            f"Entry point {entry_point!r}: module {module_name!r} has no attribute {attr!r}."
        ) from err
