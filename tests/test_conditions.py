"""The forgetting-condition grammar: what parses, what it means, and precise errors."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omoide.core.conditions import EPISODIC_FIELDS, SEMANTIC_FIELDS, parse_condition
from omoide.errors import ConditionSyntaxError, ValidationError


def episode(**facts: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "ep-1",
        "agent_name": "cto",
        "event_type": "error",
        "scope": "global",
        "state": "active",
        "outcome": None,
        "importance": 0.3,
        "freshness": 0.05,
        "access_count": 0,
        "decay_rate": 0.01,
        "length": 40,
        "age": 95.0,
        "days_since_access": 95.0,
        "has_resolution": False,
        "distilled": False,
        "protected": False,
        "tags": ["deploy", "db"],
    }
    base.update(facts)
    return base


@pytest.mark.parametrize(
    ("condition", "facts", "expected"),
    [
        # The article's four default conditions.
        ("freshness < 0.1 AND access_count < 2 AND importance < 0.5", {}, True),
        ("freshness < 0.1 AND access_count < 2 AND importance < 0.5", {"importance": 0.5}, False),
        ("event_type == 'error' AND has_resolution AND age > 60_days", {}, False),
        (
            "event_type == 'error' AND has_resolution AND age > 60_days",
            {"has_resolution": True},
            True,
        ),
        # Precedence: NOT binds tighter than AND, AND tighter than OR.
        ("importance > 0.9 OR access_count == 0 AND age > 90", {}, True),
        ("(importance > 0.9 OR access_count == 0) AND age > 100", {}, False),
        ("NOT has_resolution AND NOT distilled", {}, True),
        ("NOT NOT has_resolution", {}, False),
        # Units: durations are days; plain numbers on duration fields are days too.
        ("age > 13_weeks", {}, True),
        ("age > 14_weeks", {}, False),
        ("age >= 95", {}, True),
        ("age < 3_months", {}, False),
        ("days_since_access > 36_hours", {"days_since_access": 1.6}, True),
        ("age < 1_year", {}, True),
        # Strings, lists, membership, booleans, case-insensitive keywords.
        ("event_type IN ('error', 'conflict')", {}, True),
        ("event_type in ('decision')", {}, False),
        ("tags CONTAINS 'db'", {}, True),
        ('tags contains "ops"', {}, False),
        ("agent_name != 'ceo' and protected == false", {}, True),
        ("importance > -1 AND access_count >= 0", {}, True),
        ("access_count < 10_000", {"access_count": 9_999}, True),
        ("TRUE", {}, True),
        ("FALSE OR FALSE", {}, False),
        # Context keys are typed at run time; missing values compare false.
        ("context.source == 'human'", {"context.source": "human"}, True),
        ("context.source == 'human'", {}, False),
        ("NOT context.source == 'human'", {}, True),
        ("context.retries > 2", {"context.retries": "many"}, False),
        ("outcome == 'fixed'", {"outcome": None}, False),
        ("'error' == event_type", {}, True),
    ],
)
def test_conditions_evaluate_as_documented(
    condition: str, facts: dict[str, Any], expected: bool
) -> None:
    assert parse_condition(condition, "episodic")(episode(**facts)) is expected


def test_semantic_fields_and_metadata_keys() -> None:
    condition = parse_condition(
        "newer_version_exists AND age > 30_days AND metadata.team == 'ops'", "semantic"
    )
    doc = {"newer_version_exists": True, "age": 31.0, "metadata.team": "ops"}
    assert condition(doc)
    assert not condition({**doc, "age": 29.0})
    assert not condition({**doc, "metadata.team": "dev"})
    assert parse_condition("superseded_days > 7 AND version >= 2", "semantic")(
        {"superseded_days": 8.0, "version": 2}
    )
    # A document that was never superseded has no superseded_days: the comparison is false.
    assert not parse_condition("superseded_days > 7", "semantic")({"superseded_days": None})


def test_explain_names_the_values_read() -> None:
    condition = parse_condition("freshness < 0.1 AND access_count < 2 AND freshness >= 0")
    assert condition.fields == ("freshness", "access_count")
    assert condition.explain(episode(freshness=0.04321)) == "freshness=0.043, access_count=0"
    assert parse_condition("event_type == 'error'").explain(episode()) == "event_type='error'"


@pytest.mark.parametrize(
    ("condition", "position", "message"),
    [
        ("", 0, "empty condition"),
        ("freshness <", 11, "expected a field or a value"),
        ("fresh < 0.1", 0, "unknown field 'fresh'"),
        ("age > 30_dayz", 9, "unknown unit 'dayz'"),
        ("importance < 30_days", 13, "a duration such as 30_days"),
        ("30_days > importance", 0, "a duration such as 30_days"),
        ("event_type < 'a'", 11, "compare only with == or !="),
        ("importance == 'high'", 11, "cannot compare a number with a string"),
        ("(age > 1", 8, "expected ')' to close the '(' at position 0"),
        ("age > 1)", 7, "unbalanced ')'"),
        ("importance", 10, "expected a comparison operator after 'importance'"),
        ("age = 3", 4, "use == to compare"),
        ("event_type == 'x", 14, "unterminated string"),
        ("tags == 'a'", 5, "tested with CONTAINS"),
        ("importance CONTAINS 'a'", 11, "CONTAINS applies to a list field"),
        ("metadata.x == 1", 0, "episodic items have context.KEY"),
        ("age > 3 AND", 11, "unexpected end of condition"),
        ("age > 3 age < 4", 8, "expected AND, OR or the end"),
        ("()", 1, "empty parentheses"),
        ("event_type IN ('a', importance)", 20, "IN takes a list of values"),
        ("importance IN ('a')", 11, "cannot compare a number with a string"),
        ("age > 3 ; DROP TABLE episodes", 8, "unexpected character ';'"),
        ("__import__('os')", 0, "unknown field '__import__'"),
        ("age > - 3", 6, "'-' must be followed by a number"),
    ],
)
def test_malformed_conditions_report_the_position(
    condition: str, position: int, message: str
) -> None:
    with pytest.raises(ConditionSyntaxError) as info:
        parse_condition(condition, "episodic")
    error = info.value
    assert error.position == position, str(error)
    assert message in error.reason
    assert isinstance(error, ValidationError) and error.field == "condition"
    # The message shows the condition with a caret under the position.
    assert str(error).splitlines()[-1] == "  " + " " * position + "^"


def test_semantic_only_fields_are_refused_on_episodes_and_vice_versa() -> None:
    with pytest.raises(ConditionSyntaxError, match="newer_version_exists"):
        parse_condition("newer_version_exists", "episodic")
    with pytest.raises(ConditionSyntaxError, match="has_resolution"):
        parse_condition("has_resolution", "semantic")
    with pytest.raises(ConditionSyntaxError, match="episodic or semantic"):
        parse_condition("age > 3", "procedural")


def test_label_prefixes_the_message() -> None:
    with pytest.raises(ConditionSyntaxError) as info:
        parse_condition("age >", "episodic", label="policy 'old'")
    assert info.value.reason.startswith("policy 'old': ")
    assert info.value.position == 5


def test_field_tables_cover_the_article_vocabulary() -> None:
    for name in ("freshness", "age", "access_count", "importance", "event_type"):
        assert name in EPISODIC_FIELDS
    for name in ("newer_version_exists", "age", "access_count"):
        assert name in SEMANTIC_FIELDS
    assert "has_resolution" in EPISODIC_FIELDS


_NUMERIC = [n for n, t in EPISODIC_FIELDS.items() if t == "number"]
_DURATION = [n for n, t in EPISODIC_FIELDS.items() if t == "duration"]
_BOOL = [n for n, t in EPISODIC_FIELDS.items() if t == "bool"]


@st.composite
def conditions(draw: st.DrawFn, depth: int = 0) -> str:
    """Random well-formed episodic conditions."""
    kind = draw(st.integers(0, 4 if depth < 3 else 2))
    if kind == 0:
        field = draw(st.sampled_from(_NUMERIC))
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
        return f"{field} {op} {draw(st.floats(-5, 5, allow_nan=False)):.3f}"
    if kind == 1:
        field = draw(st.sampled_from(_DURATION))
        unit = draw(st.sampled_from(["days", "weeks", "hours", "months", "day"]))
        return f"{field} > {draw(st.integers(0, 400))}_{unit}"
    if kind == 2:
        return draw(st.sampled_from(_BOOL))
    left = draw(conditions(depth + 1))
    right = draw(conditions(depth + 1))
    if kind == 3:
        return f"({left}) {draw(st.sampled_from(['AND', 'OR', 'and', 'or']))} ({right})"
    return f"NOT ({left})"


@settings(max_examples=200, deadline=None)
@given(conditions(), st.floats(0, 1), st.integers(0, 50), st.floats(0, 400))
def test_random_well_formed_conditions_parse_and_evaluate_to_booleans(
    text: str, importance: float, access: int, age: float
) -> None:
    condition = parse_condition(text, "episodic")
    result = condition(episode(importance=importance, access_count=access, age=age))
    assert isinstance(result, bool)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_arbitrary_text_either_parses_or_raises_condition_syntax_error(text: str) -> None:
    try:
        condition = parse_condition(text, "semantic")
    except ConditionSyntaxError as exc:
        assert 0 <= exc.position <= len(text)
    else:
        assert isinstance(condition({}), bool)
