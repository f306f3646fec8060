"""Task sources: where the problems of a data-driven env (math, code) come from.

A planning env generates its level from the task seed. A reasoning env draws its task from
a *source*: a generator (unlimited, seeded) or a finite data set (GSM8K, HumanEval, a
user's jsonl file). ``TaskSource.task(index)`` is the one call an env makes:

* generated source: ``index`` is the task seed itself, the task is a pure function of it;
* finite source: task ``index % size`` (a test seed block larger than the data set wraps
  around, which ``benchmarks.evaluate`` reports as repeated items).

Sources are looked up by name in a ``SourceRegistry`` (plain dict, loud on unknown names),
or built from a file path, so ``make("math", test_source="path/to/my.jsonl")`` works.
Loading is lazy and cached: naming a source costs nothing until a task is asked for.

``SourcedEnv`` is the base of such envs: ``train_source`` / ``test_source`` arguments, the
seed -> task mapping, and a source that is looked up rather than stored (so envs pickle).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from envs.core import TextAECEnv
from envs.splits import split_range

__all__ = ["TaskSource", "SourceRegistry", "SourcedEnv", "finite_source", "generated_source"]

T = TypeVar("T")


@dataclass(frozen=True)
class TaskSource(Generic[T]):
    """A named supply of tasks.

    Attributes:
        name: Registry name or file path, recorded in task ids and results.
        fetch: ``index -> task``; use ``task()``, which also checks the index.
        size: Number of distinct tasks, ``None`` for a generator (unlimited).
        description: One line for ``--help`` and error messages (data origin, license).
    """

    name: str
    fetch: Callable[[int], T] = field(repr=False)
    size: int | None = None
    description: str = ""

    def task(self, index: int) -> T:
        """Task ``index`` (finite sources wrap around: ``index % size``)."""
        if index < 0:
            raise ValueError(f"task index must be >= 0, got {index}")
        return self.fetch(index if self.size is None else index % self.size)


def finite_source(
    name: str, load: Callable[[], Sequence[T]], size: int, description: str = ""
) -> TaskSource[T]:
    """A data-set source. ``load`` runs once, on the first task asked for; ``size`` is
    declared up front so an env can report it without loading (it is checked on load)."""

    @functools.cache
    def items() -> Sequence[T]:
        loaded = load()
        if len(loaded) != size:
            raise RuntimeError(
                f"task source {name!r}: expected {size} items, the loader returned {len(loaded)}"
            )
        return loaded

    return TaskSource(name=name, fetch=lambda index: items()[index], size=size, description=description)


def generated_source(name: str, generate: Callable[[int], T], description: str = "") -> TaskSource[T]:
    """An unlimited source: ``generate(seed)`` must be deterministic in the seed."""
    return TaskSource(name=name, fetch=generate, size=None, description=description)


class SourceRegistry(Generic[T]):
    """Name -> source factory, plus file paths handled by ``load_path``.

    Args:
        kind: What the tasks are (``"math"``, ``"code"``), for error messages.
        load_path: ``Path -> TaskSource`` for a user's file (``None``: names only).
    """

    def __init__(self, kind: str, load_path: Callable[[Path], TaskSource[T]] | None = None) -> None:
        self.kind = kind
        self._factories: dict[str, Callable[[], TaskSource[T]]] = {}
        self._load_path = load_path

    def register(self, name: str, factory: Callable[[], TaskSource[T]]) -> None:
        if name in self._factories:
            raise ValueError(f"{self.kind} task source {name!r} is already registered")
        self._factories[name] = factory

    def names(self) -> list[str]:
        return sorted(self._factories)

    def get(self, name_or_path: str | Path) -> TaskSource[T]:
        """The source with this name, or the file at this path; raises naming the choices."""
        key = str(name_or_path)
        if key in self._factories:
            return _cached_source(self, key)
        looks_like_path = isinstance(name_or_path, Path) or any(c in key for c in "/\\.")
        if looks_like_path and self._load_path is not None:
            path = Path(key).expanduser().resolve()
            if not path.is_file():
                raise FileNotFoundError(f"{self.kind} task file {str(path)!r} does not exist")
            # Envs look their source up on every reset: read a file once (again if it changes).
            return _cached_file_source(self, str(path), path.stat().st_mtime_ns)
        raise KeyError(
            f"unknown {self.kind} task source {key!r}; registered: {', '.join(self.names())}"
            + (", or a path to a data file" if self._load_path is not None else "")
        )


@functools.cache
def _cached_source(registry: SourceRegistry[Any], name: str) -> TaskSource[Any]:
    # One source object (and so one loaded copy of its data) per registry name per process.
    return registry._factories[name]()


@functools.lru_cache(maxsize=32)
def _cached_file_source(registry: SourceRegistry[Any], path: str, mtime_ns: int) -> TaskSource[Any]:
    assert registry._load_path is not None
    return registry._load_path(Path(path))


class SourcedEnv(TextAECEnv):
    """A ``TextAECEnv`` whose tasks come from a ``SourceRegistry`` (``SOURCES``).

    Args:
        train_source, test_source: Source names or file paths, used by ``split="train"``
            and ``split="test"`` envs respectively (so one set of kwargs serves a training
            run and its held-out evaluation).
        **kwargs: ``TextAECEnv`` arguments.

    Task seed ``s`` plays item ``s - (first seed of the split)`` of the split's source.
    """

    SOURCES: ClassVar[SourceRegistry[Any]]
    CLONE_SHARED_ATTRS: ClassVar[tuple[str, ...]] = ("spec", "task")

    def __init__(self, *, train_source: str, test_source: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.train_source, self.test_source = str(train_source), str(test_source)
        self.source_name = self.train_source if self.split == "train" else self.test_source
        self.source  # noqa: B018 - fails now, not at reset, on an unknown name or a missing file

    @property
    def source(self) -> TaskSource[Any]:
        # Looked up, not stored: a source holds closures over loaded data (not picklable);
        # the registry caches it per process, so this is a dict lookup.
        return self.SOURCES.get(self.source_name)

    def _task_for_seed(self, task_seed: int) -> Any:
        return self.source.task(task_seed - split_range(self.split).start)
