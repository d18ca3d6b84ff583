"""The command line's cell clipping: the same text as ``str()`` for what a cell shows whole, and work
bounded by the cell's width for values a damaged file made huge (table fuzzer, seed 37 case 537: a field
name of 5,000,000 characters in every data file's column metrics took seconds per ``table files``)."""

from __future__ import annotations

import tracemalloc

from puffin_explorer.cli._output import MAX_CELL, clip, short_repr


def test_short_values_are_written_as_str_writes_them():
    for v in ({"b": 1, "a": [1, (2,), {3}, frozenset(), set()], "c": b"xy", "d": None, "e": 1.5},
              [], (), {}, [1, "a"], ("x",), frozenset({1}), {"id": {"min": -3, "max": 7}}):
        assert short_repr(v) == str(v)
    assert clip({"z": 1, "a": 2}) == "{'z': 1, 'a': 2}"  # the dict's own order, as str() keeps it
    assert clip("  a \n  b ") == "a b"


def test_a_huge_value_is_clipped_without_copying_it_whole():
    name = "\u202e" * 5_000_000
    tracemalloc.start()
    try:
        text = clip({name: 123, "a": 1})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(text) == MAX_CELL and text.startswith("{'\\u202e") and text.endswith("…: 123, 'a': 1}")
    assert peak < 1 << 20  # str() of the dict alone is 30 MB
    assert clip(list(range(10**6))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9,…3, 54, 55, 56, 57, 58, 59, …]"
    assert clip("x" * 10**7) == "x" * 30 + "…" + "x" * 29
