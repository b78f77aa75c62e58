"""Ids made without a system call each: unique, 32 hex digits, each generator its own."""

from __future__ import annotations

from rota._ids import UniqueIds


def test_ids_are_distinct_hex_of_one_length() -> None:
    ids = UniqueIds()
    made = [ids.next() for _ in range(10_000)]
    assert len(set(made)) == len(made)
    assert {len(i) for i in made} == {32}
    assert all(int(i, 16) >= 0 for i in made)


def test_every_digit_varies() -> None:
    """No shared prefix or fixed positions (Lua hashes a sample of a string's characters)."""
    made = [UniqueIds().next() for _ in range(200)]
    assert all(len({i[pos] for i in made}) > 8 for pos in range(32))


def test_a_reseeded_generator_does_not_repeat_itself() -> None:
    ids = UniqueIds()
    first = [ids.next() for _ in range(5)]
    ids.reseed()
    assert not set(first) & {ids.next() for _ in range(5)}
