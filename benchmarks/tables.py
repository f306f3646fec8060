"""The plain-text table every benchmark script prints (right-aligned columns, a rule)."""

from __future__ import annotations

__all__ = ["print_table"]


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """Prints ``header`` and ``rows`` (cells already formatted) as aligned columns."""
    widths = [max(len(cell) for cell in column) + 2 for column in zip(header, *rows, strict=True)]
    print("".join(cell.rjust(width) for cell, width in zip(header, widths, strict=True)))
    print("-" * sum(widths))
    for row in rows:
        print("".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))
