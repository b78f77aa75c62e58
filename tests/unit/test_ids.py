"""Ids made without a system call each: unique, 32 hex digits, fresh after a wrap."""

from __future__ import annotations

import itertools

from rota._ids import UniqueIds


def test_ids_are_distinct_hex_of_one_length() -> None:
    ids = UniqueIds()
    made = [ids.next() for _ in range(10_000)]
    assert len(set(made)) == len(made)
    assert {len(i) for i in made} == {32}
    assert all(int(i, 16) >= 0 for i in made)


def test_a_new_generator_or_a_wrapped_counter_draws_a_new_prefix() -> None:
    ids = UniqueIds()
    first = ids.next()
    assert UniqueIds().next()[:24] != first[:24]
    ids._count = itertools.count(0xFFFFFFFF)
    last = ids.next()
    assert last.endswith("ffffffff") and last[:24] == first[:24]
    wrapped = ids.next()
    assert wrapped[:24] != first[:24] and wrapped.endswith("00000000")
