"""The condition language of forgetting policies, parsed safely (never ``eval``).

A condition is a boolean expression over the *facts* of one item (an episode or a semantic
document)::

    condition   := or_expr
    or_expr     := and_expr ("OR" and_expr)*
    and_expr    := not_expr ("AND" not_expr)*
    not_expr    := "NOT" not_expr | primary
    primary     := "(" or_expr ")" | comparison | field          -- a bare field must be boolean
    comparison  := operand ("==" | "!=" | "<" | "<=" | ">" | ">=") operand
                 | operand "IN" "(" literal ("," literal)* ")"
                 | field "CONTAINS" string                         -- list fields (tags)
    operand     := field | literal
    literal     := number | duration | string | TRUE | FALSE
    number      := -?digits[_digits]*[.digits]                    -- 0.5, 10_000
    duration    := number "_" unit                                 -- 30_days, 12_hours, 6_months
    string      := '...' | "..."                                   -- backslash escapes \\ \' \"

Keywords are case-insensitive. Durations are measured in days (``unit`` is one of minute,
hour, day, week, month = 30 days, year = 365 days, singular or plural); a plain number compared
with a duration field is read as days, so ``age > 30`` equals ``age > 30_days``.

Fields depend on the policy's layer (:data:`EPISODIC_FIELDS`, :data:`SEMANTIC_FIELDS`);
``context.KEY`` (episodes) and ``metadata.KEY`` (documents) read one key of the item's
context or metadata. Types are checked when the condition is parsed: a number is not compared
with a string, a duration only with a duration field. A comparison with a missing value (a
metadata key the item does not have) is false — and ``NOT`` of it true.

Anything malformed raises :class:`~omoide.errors.ConditionSyntaxError` with the 0-based
position of the problem, when the policy is loaded rather than when it runs.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from omoide.errors import ConditionSyntaxError

__all__ = [
    "EPISODIC_FIELDS",
    "SEMANTIC_FIELDS",
    "Condition",
    "FieldType",
    "fields_for",
    "parse_condition",
]

FieldType = Literal["number", "duration", "string", "bool", "list", "any"]

#: Fields of an episode, with their types. ``context.KEY`` reads the episode's context.
EPISODIC_FIELDS: Mapping[str, FieldType] = {
    "id": "string",
    "agent_name": "string",
    "event_type": "string",
    "scope": "string",
    "state": "string",
    "outcome": "string",
    "importance": "number",
    "freshness": "number",
    "access_count": "number",
    "decay_rate": "number",
    "length": "number",
    "age": "duration",
    "days_since_access": "duration",
    "has_resolution": "bool",
    "distilled": "bool",
    "protected": "bool",
    "tags": "list",
}

#: Fields of a semantic document. ``metadata.KEY`` reads one metadata key.
SEMANTIC_FIELDS: Mapping[str, FieldType] = {
    "id": "string",
    "collection": "string",
    "agent_name": "string",
    "scope": "string",
    "state": "string",
    "subject": "string",
    "category": "string",
    "source": "string",
    "event_type": "string",
    "importance": "number",
    "confidence": "number",
    "freshness": "number",
    "access_count": "number",
    "version": "number",
    "length": "number",
    "age": "duration",
    "days_since_access": "duration",
    "superseded_days": "duration",
    "newer_version_exists": "bool",
    "distilled": "bool",
    "protected": "bool",
    "tags": "list",
}

_PREFIXES = {"episodic": "context.", "semantic": "metadata."}

_UNITS: Mapping[str, float] = {
    "minute": 1 / 1440,
    "hour": 1 / 24,
    "day": 1.0,
    "week": 7.0,
    "month": 30.0,
    "year": 365.0,
}

_KEYWORDS = {"and", "or", "not", "in", "contains", "true", "false"}

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:_\d+)*(?:\.\d+)?(?:_[A-Za-z]+)?)(?![A-Za-z0-9_.])
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_][A-Za-z0-9_\-]*)*)
  | (?P<op>==|!=|<=|>=|<|>)
  | (?P<punct>[(),\-])
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    """,
    re.VERBOSE,
)

_COMPARE: Mapping[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

Facts = Mapping[str, Any]
Evaluator = Callable[[Facts], bool]


def fields_for(layer: str) -> Mapping[str, FieldType]:
    """The fields a condition on ``layer`` (``episodic`` or ``semantic``) may use."""
    if layer == "episodic":
        return EPISODIC_FIELDS
    if layer == "semantic":
        return SEMANTIC_FIELDS
    raise ValueError(f"conditions apply to the episodic or semantic layer, not {layer!r}")


@dataclass(frozen=True)
class _Token:
    kind: str  # number | name | keyword | op | punct | string | end
    text: str
    position: int
    value: Any = None


@dataclass(frozen=True)
class _Operand:
    """A field reference or a literal, typed."""

    kind: FieldType
    position: int
    field: str | None = None
    value: Any = None
    unit: bool = False  # a literal written with a unit (a duration)

    def get(self, facts: Facts) -> Any:
        return facts.get(self.field) if self.field is not None else self.value


@dataclass(frozen=True)
class Condition:
    """A parsed condition: call it with an item's facts to evaluate it."""

    source: str
    layer: str
    #: The fields the condition reads (for explaining a decision).
    fields: tuple[str, ...]
    _evaluate: Evaluator

    def __call__(self, facts: Facts) -> bool:
        return self._evaluate(facts)

    def explain(self, facts: Facts) -> str:
        """The values the condition read, e.g. ``freshness=0.05, access_count=0``."""
        parts = []
        for name in self.fields:
            value = facts.get(name)
            if isinstance(value, float):
                value = round(value, 3)
            parts.append(f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}")
        return ", ".join(parts)


def parse_condition(source: str, layer: str = "episodic", *, label: str = "") -> Condition:
    """Parse ``source`` for ``layer``; raise ConditionSyntaxError (with a position) if invalid.

    ``label`` (such as ``"policy 'stale'"``) starts the error message.
    """
    if not isinstance(source, str):
        raise ConditionSyntaxError(
            repr(source), 0, _labelled(label, "a condition must be a string")
        )
    try:
        parser = _Parser(source, layer)
        evaluate = parser.parse()
    except ConditionSyntaxError as exc:
        if not label:
            raise
        raise ConditionSyntaxError(source, exc.position, _labelled(label, exc.reason)) from None
    return Condition(source, layer, tuple(dict.fromkeys(parser.used)), evaluate)


def _labelled(label: str, message: str) -> str:
    return f"{label}: {message}" if label else message


def _tokenize(source: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None:
            char = source[position]
            if char in "'\"":
                raise ConditionSyntaxError(source, position, "unterminated string")
            hint = " (use == to compare)" if char == "=" else ""
            raise ConditionSyntaxError(source, position, f"unexpected character {char!r}{hint}")
        kind = match.lastgroup or ""
        text = match.group()
        if kind == "string":
            tokens.append(_Token("string", text, position, _unescape(text[1:-1])))
        elif kind == "name" and text.lower() in _KEYWORDS:
            tokens.append(_Token("keyword", text.lower(), position))
        elif kind == "number":
            tokens.append(_number_token(source, text, position))
        elif kind != "space":
            tokens.append(_Token(kind, text, position))
        position = match.end()
    tokens.append(_Token("end", "", len(source)))
    return tokens


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", r"\1", body)


_NUMBER = re.compile(r"(\d+(?:_\d+)*(?:\.\d+)?)(?:_([A-Za-z]+))?")


def _number_token(source: str, text: str, position: int) -> _Token:
    match = _NUMBER.fullmatch(text)
    assert match is not None  # the tokenizer matched the same pattern
    digits, unit = match.group(1), match.group(2)
    value = float(digits.replace("_", ""))
    if unit is None:
        return _Token("number", text, position, int(value) if value.is_integer() else value)
    name = unit.lower()
    factor = _UNITS.get(name) or (_UNITS.get(name[:-1]) if name.endswith("s") else None)
    if factor is None:
        raise ConditionSyntaxError(
            source,
            position + len(digits) + 1,
            f"unknown unit {unit!r} (use {', '.join(f'{u}s' for u in _UNITS)})",
        )
    return _Token("duration", text, position, value * factor)


class _Parser:
    """Recursive descent over the token list, building closures."""

    def __init__(self, source: str, layer: str) -> None:
        self.source = source
        self.layer = layer
        try:
            self.fields = fields_for(layer)
        except ValueError as exc:
            raise ConditionSyntaxError(source, 0, str(exc)) from None
        self.prefix = _PREFIXES[layer]
        self.tokens = _tokenize(source)
        self.at = 0
        self.used: list[str] = []

    # -- token helpers ----------------------------------------------------------------

    @property
    def token(self) -> _Token:
        return self.tokens[self.at]

    def advance(self) -> _Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def is_keyword(self, word: str) -> bool:
        return self.token.kind == "keyword" and self.token.text == word

    def error(self, message: str, token: _Token | None = None) -> ConditionSyntaxError:
        token = token or self.token
        return ConditionSyntaxError(self.source, token.position, message)

    def expect_punct(self, char: str) -> None:
        if self.token.kind != "punct" or self.token.text != char:
            raise self.error(f"expected {char!r}, found {self._describe(self.token)}")
        self.advance()

    @staticmethod
    def _describe(token: _Token) -> str:
        return "the end of the condition" if token.kind == "end" else repr(token.text)

    # -- grammar ----------------------------------------------------------------------

    def parse(self) -> Evaluator:
        if self.token.kind == "end":
            raise self.error("empty condition")
        evaluate = self.or_expr()
        if self.token.kind != "end":
            if self.token.kind == "punct" and self.token.text == ")":
                raise self.error("unbalanced ')'")
            raise self.error(f"expected AND, OR or the end, found {self._describe(self.token)}")
        return evaluate

    def or_expr(self) -> Evaluator:
        parts = [self.and_expr()]
        while self.is_keyword("or"):
            self.advance()
            parts.append(self.and_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda facts: any(p(facts) for p in parts)

    def and_expr(self) -> Evaluator:
        parts = [self.not_expr()]
        while self.is_keyword("and"):
            self.advance()
            parts.append(self.not_expr())
        if len(parts) == 1:
            return parts[0]
        return lambda facts: all(p(facts) for p in parts)

    def not_expr(self) -> Evaluator:
        if self.is_keyword("not"):
            self.advance()
            inner = self.not_expr()
            return lambda facts: not inner(facts)
        return self.primary()

    def primary(self) -> Evaluator:
        token = self.token
        if token.kind == "punct" and token.text == "(":
            self.advance()
            if self.token.kind == "punct" and self.token.text == ")":
                raise self.error("empty parentheses")
            inner = self.or_expr()
            if self.token.kind != "punct" or self.token.text != ")":
                raise self.error(
                    f"expected ')' to close the '(' at position {token.position}, "
                    f"found {self._describe(self.token)}"
                )
            self.advance()
            return inner
        if token.kind == "end":
            raise self.error("unexpected end of condition: expected a comparison")
        left = self.operand()
        if self.token.kind == "op":
            op = self.advance()
            right = self.operand()
            return self.comparison(left, op, right)
        if self.is_keyword("in"):
            return self.membership(left)
        if self.is_keyword("contains"):
            return self.contains(left)
        if left.field is not None and left.kind in ("bool", "any"):
            return _truthy(left)
        if left.kind == "bool":  # TRUE / FALSE on their own
            value = bool(left.value)
            return lambda facts: value
        raise self.error(
            f"expected a comparison operator after {token.text!r}"
            + (" (only boolean fields stand alone)" if left.field is not None else ""),
            self.token if self.token.kind != "end" else None,
        )

    def operand(self) -> _Operand:
        token = self.token
        if token.kind == "punct" and token.text == "-":
            self.advance()
            number = self.token
            if number.kind not in ("number", "duration") or number.position != token.position + 1:
                raise self.error("'-' must be followed by a number", token)
            self.advance()
            return _Operand(
                "duration" if number.kind == "duration" else "number",
                token.position,
                value=-number.value,
                unit=number.kind == "duration",
            )
        if token.kind == "number":
            self.advance()
            return _Operand("number", token.position, value=token.value)
        if token.kind == "duration":
            self.advance()
            return _Operand("duration", token.position, value=token.value, unit=True)
        if token.kind == "string":
            self.advance()
            return _Operand("string", token.position, value=token.value)
        if token.kind == "keyword" and token.text in ("true", "false"):
            self.advance()
            return _Operand("bool", token.position, value=token.text == "true")
        if token.kind == "name":
            self.advance()
            return self.field(token)
        raise self.error(f"expected a field or a value, found {self._describe(token)}")

    def field(self, token: _Token) -> _Operand:
        name = token.text
        kind = self.fields.get(name)
        if kind is None and name.startswith(self.prefix) and len(name) > len(self.prefix):
            kind = "any"
        if kind is None:
            other = _PREFIXES["semantic" if self.layer == "episodic" else "episodic"]
            hint = ""
            if name.startswith(other):
                hint = f" ({self.layer} items have {self.prefix}KEY, not {other}KEY)"
            raise self.error(
                f"unknown field {name!r} for the {self.layer} layer{hint}; known: "
                f"{', '.join(sorted(self.fields))}, {self.prefix}KEY",
                token,
            )
        self.used.append(name)
        return _Operand(kind, token.position, field=name)

    def comparison(self, left: _Operand, op: _Token, right: _Operand) -> Evaluator:
        self.check_types(left, op, right)
        compare = _COMPARE[op.text]
        return lambda facts: _safe(compare, left.get(facts), right.get(facts))

    def check_types(self, left: _Operand, op: _Token, right: _Operand) -> None:
        kinds = {left.kind, right.kind}
        if "any" in kinds:
            return
        if "list" in kinds:
            raise self.error("a list field (tags) is tested with CONTAINS", op)
        if kinds <= {"number", "duration"}:
            for unit_side, other in ((left, right), (right, left)):
                if unit_side.unit and other.kind != "duration":
                    raise self.error(
                        "a duration such as 30_days compares only with a duration field "
                        "(age, days_since_access, superseded_days)",
                        _token_at(self.tokens, unit_side.position),
                    )
            return
        if left.kind != right.kind:
            raise self.error(f"cannot compare a {left.kind} with a {right.kind}", op)
        if left.kind in ("string", "bool") and op.text not in ("==", "!="):
            raise self.error(f"{left.kind} values compare only with == or !=", op)

    def membership(self, left: _Operand) -> Evaluator:
        keyword = self.advance()
        self.expect_punct("(")
        values: list[Any] = []
        while True:
            item = self.operand()
            if item.field is not None:
                raise self.error("IN takes a list of values, not fields", self.tokens[self.at - 1])
            if left.kind not in ("any", item.kind) and not (
                {left.kind, item.kind} <= {"number", "duration"} and not item.unit
            ):
                raise self.error(f"cannot compare a {left.kind} with a {item.kind}", keyword)
            values.append(item.value)
            if self.token.kind == "punct" and self.token.text == ",":
                self.advance()
                continue
            break
        self.expect_punct(")")
        return lambda facts: _safe(lambda a, b: a in b, left.get(facts), values)

    def contains(self, left: _Operand) -> Evaluator:
        keyword = self.advance()
        if left.kind not in ("list", "any"):
            raise self.error("CONTAINS applies to a list field (tags)", keyword)
        item = self.operand()
        if item.kind != "string" or item.field is not None:
            raise self.error("CONTAINS takes a string", self.tokens[self.at - 1])
        wanted = item.value
        return lambda facts: _contains(left.get(facts), wanted)


def _token_at(tokens: Sequence[_Token], position: int) -> _Token:
    for token in tokens:
        if token.position == position:
            return token
    return tokens[-1]


def _truthy(operand: _Operand) -> Evaluator:
    return lambda facts: bool(operand.get(facts))


def _safe(compare: Callable[[Any, Any], bool], left: Any, right: Any) -> bool:
    """Compare, treating a missing value or incomparable types as false."""
    if left is None or right is None:
        return False
    if isinstance(left, bool) != isinstance(right, bool) and not isinstance(right, list):
        return False
    try:
        return bool(compare(left, right))
    except TypeError:
        return False


def _contains(value: Any, wanted: str) -> bool:
    if isinstance(value, list | tuple | set | frozenset):
        return wanted in value
    if isinstance(value, str):
        return wanted in (part.strip() for part in value.split(","))
    return False
