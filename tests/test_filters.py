"""Chroma filters: a caller's filter is checked; reader flags select what an agent may read."""

from __future__ import annotations

import math
from typing import Any

import pytest

from omoide.core.filters import (
    DOC_OPERATORS,
    FIELD_OPERATORS,
    check_where,
    public_metadata,
    reader_flags,
    reader_where,
)
from omoide.errors import ValidationError


def test_reader_flags_and_where_agree() -> None:
    shared = reader_flags("cto", "agent:ceo,team:leads")
    assert shared == {
        "_agent": "cto",
        "_scope": "agent:ceo,team:leads",
        "_global": False,
        "_r:agent:ceo": True,
        "_r:team:leads": True,
    }
    assert reader_flags("cto", "global")["_global"] is True
    assert reader_where("ceo", ["leads"]) == {
        "$or": [
            {"_global": True},
            {"_agent": "ceo"},
            {"_r:agent:ceo": True},
            {"_r:team:leads": True},
        ]
    }


def test_a_valid_filter_passes_unchanged() -> None:
    where = {"$and": [{"subject": {"$in": ["a", "b"]}}, {"importance": {"$gte": 0.5}}]}
    assert check_where(where, "where", FIELD_OPERATORS | {"$and", "$or"}) == where
    assert check_where({"$contains": "deploy"}, "where_document", DOC_OPERATORS) == {
        "$contains": "deploy"
    }


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ({"_agent": "ceo"}, "where._agent"),  # reserved: could widen a scope
        ({"x": {"$near": 1}}, "where.x.$near"),
        ({"$and": []}, "where.$and"),
        ({"x": math.nan}, "where.x"),
        ({"x": [object()]}, "where.x"),
        ({}, "where"),
    ],
)
def test_bad_filters_are_refused(where: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        check_where(where, "where", FIELD_OPERATORS | {"$and", "$or"})
    assert err.value.field == field


def test_document_filters_take_operators_only() -> None:
    with pytest.raises(ValidationError):
        check_where({"text": "x"}, "where_document", DOC_OPERATORS)


def test_public_metadata_hides_reserved_keys() -> None:
    assert public_metadata({"_doc": "d", "subject": "s"}) == {"subject": "s"}
