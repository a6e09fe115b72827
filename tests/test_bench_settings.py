"""The benchmarks' ``--setting NAME=VALUE`` variants: numbers, tuples, and refused input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # bench/ is a folder of scripts beside the package
    sys.path.insert(0, str(ROOT))

from bench.results import add_setting_option, setting_variants  # noqa: E402

from omoide.core.config import RouterConfig  # noqa: E402


def _variants(*settings: str) -> dict[str, RouterConfig]:
    parser = argparse.ArgumentParser()
    add_setting_option(parser)
    args = parser.parse_args([f"--setting={s}" for s in settings])
    return setting_variants(parser, args.setting)


def test_a_number_and_a_tuple_become_one_variant_each() -> None:
    variants = _variants("candidate_pool=100", "context_key_weights=1,0.25,0.1")
    assert variants["variant: candidate_pool = 100"].candidate_pool == 100
    weights = variants["variant: context_key_weights = 1,0.25,0.1"].context_key_weights
    assert weights == (1.0, 0.25, 0.1)
    # Everything else stays the default.
    assert variants["variant: candidate_pool = 100"].context_key_weights == (
        RouterConfig().context_key_weights
    )


@pytest.mark.parametrize(
    "setting",
    [
        "no_such_setting=1",
        "candidate_pool=",
        "candidate_pool=many",
        "context_key_weights=1,x",
        "context_key_weights=1,0.5",
    ],
)
def test_a_bad_setting_is_refused(setting: str) -> None:
    with pytest.raises(SystemExit):
        _variants(setting)
