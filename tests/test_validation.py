"""Boundary checks shared by the stores: lists of names."""

from __future__ import annotations

import pytest

from omoide.core.validation import check_list, check_names
from omoide.errors import ValidationError


def test_check_list_takes_lists_and_tuples_of_the_right_length() -> None:
    assert check_list("metadatas", ({"a": 1}, None), length=2) == [{"a": 1}, None]
    assert check_list("metadatas", None, length=3) == [None, None, None]
    assert check_list("ids", []) == []


@pytest.mark.parametrize(
    ("value", "length", "message"),
    [
        (None, None, "expected a list"),
        ("abc", None, "expected a list, got str"),
        (b"abc", None, "expected a list, got bytes"),
        ({"a": 1}, None, "expected a list, got dict"),
        ([1, 2], 3, "has 2 items but 3 were expected"),
    ],
)
def test_check_list_refuses_anything_else(value: object, length: int | None, message: str) -> None:
    with pytest.raises(ValidationError) as info:
        check_list("metadatas", value, length=length)
    assert info.value.field == "metadatas" and info.value.message == message


def test_check_names_names_the_bad_item() -> None:
    assert check_names("ids", ["a", "b", "a"]) == ["a", "b", "a"]  # order and duplicates kept
    with pytest.raises(ValidationError) as info:
        check_names("ids", ["a", "", "c"])
    assert info.value.field == "ids[1]"
    with pytest.raises(ValidationError) as info:
        check_names("ids", ["a"], length=2)
    assert info.value.field == "ids"
