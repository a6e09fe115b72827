"""The error tree and the set-up commands (the public names are pinned in test_public_api)."""

from __future__ import annotations

import re
from pathlib import Path

from omoide import errors

ROOT = Path(__file__).resolve().parent.parent


def test_every_error_derives_from_the_base_and_is_drawn_in_the_docstring() -> None:
    doc = errors.__doc__ or ""
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.OmoideError), name
        assert name in doc, f"{name} missing from the hierarchy in errors.py's docstring"
    assert list(errors.__all__) == sorted(errors.__all__)
    assert issubclass(errors.ValidationError, ValueError)
    assert issubclass(errors.NotFoundError, KeyError)


def test_validation_error_names_the_field() -> None:
    err = errors.ValidationError("importance", "must be within [0, 1]")
    assert err.field == "importance"
    assert str(err) == "importance: must be within [0, 1]"
    assert str(errors.NotFoundError("episode", "ep-1")) == "episode 'ep-1' not found"


def test_readme_starts_with_the_two_setup_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```(?:bash|sh)\n(.+?)\n```", readme, flags=re.S)
    assert len(commands) >= 2
    demo, tests = commands[0].strip(), commands[1].strip()
    assert "omoide demo" in demo and "pip install" in demo
    assert "pytest" in tests and "pip install" in tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1].strip() == tests, "the last line of .ci/run must be the README's test command"
