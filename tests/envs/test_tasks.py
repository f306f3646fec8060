"""Task sources: finite data sets wrap around, generators are pure, registries fail loudly."""

from __future__ import annotations

import pytest

from envs.tasks import SourceRegistry, TaskSource, finite_source, generated_source


def test_finite_source_loads_once_and_wraps_around():
    calls = []

    def load():
        calls.append(1)
        return ["a", "b", "c"]

    source = finite_source("letters", load, size=3)
    assert calls == []  # naming a source costs nothing
    assert [source.task(i) for i in range(7)] == ["a", "b", "c", "a", "b", "c", "a"]
    assert calls == [1]
    with pytest.raises(ValueError, match=">= 0"):
        source.task(-1)


def test_finite_source_checks_its_declared_size():
    source = finite_source("short", lambda: ["a"], size=2)
    with pytest.raises(RuntimeError, match="expected 2 items, the loader returned 1"):
        source.task(0)


def test_generated_source_passes_the_seed_through():
    source = generated_source("square", lambda seed: seed * seed)
    assert source.size is None and source.task(12) == 144


def test_registry_names_paths_and_errors(tmp_path):
    loads = []

    def load_path(path):
        loads.append(path)
        lines = path.read_text().split()
        return finite_source(str(path), lambda: lines, size=len(lines))

    registry: SourceRegistry[str] = SourceRegistry("word", load_path=load_path)
    registry.register("one", lambda: finite_source("one", lambda: ["x"], size=1))
    assert registry.get("one") is registry.get("one")  # cached per process
    with pytest.raises(ValueError, match="already registered"):
        registry.register("one", lambda: finite_source("one", lambda: ["y"], size=1))
    with pytest.raises(KeyError, match="registered: one, or a path"):
        registry.get("two")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        registry.get(str(tmp_path / "missing.txt"))
    data = tmp_path / "words.txt"
    data.write_text("p q r")
    first = registry.get(str(data))
    assert isinstance(first, TaskSource) and first.task(1) == "q"
    assert registry.get(str(data)) is first and len(loads) == 1  # a file is read once
    names_only: SourceRegistry[str] = SourceRegistry("word")
    with pytest.raises(KeyError, match="unknown word task source 'x.txt'") as error:
        names_only.get("x.txt")
    assert "path" not in str(error.value)  # no file loader: paths are not offered
