"""The LoCoMo benchmark's data handling (the README's evidence cleaning), on inline data."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "locomo.py"


@pytest.fixture(scope="module")
def locomo() -> object:
    if str(BENCH.parents[1]) not in sys.path:  # bench/ imports its siblings as ``bench.*``
        sys.path.insert(0, str(BENCH.parents[1]))
    spec = importlib.util.spec_from_file_location("bench_locomo", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_locomo"] = module
    spec.loader.exec_module(module)
    return module


def test_evidence_cleaning(locomo: object) -> None:
    clean = locomo.clean_evidence  # type: ignore[attr-defined]
    valid = {"D1:3", "D11:26", "D30:5", "D2:1"}
    assert clean(["D1:3; D2:1"], valid) == ["D1:3", "D2:1"]
    assert clean(["D:11:26"], valid) == ["D11:26"]
    assert clean(["D30:05"], valid) == ["D30:5"]
    assert clean(["D1:3,D9:9 D2:1"], valid) == ["D1:3", "D2:1"]  # unknown ids dropped
    assert clean(["D1:3", "D1:3"], valid) == ["D1:3"]
    assert clean([], valid) == []


def test_load_orders_turns_and_skips_questions_without_evidence(
    locomo: object, tmp_path: Path
) -> None:
    data = [
        {
            "sample_id": "c1",
            "conversation": {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                    {"speaker": "B", "dia_id": "D1:2", "text": "look", "blip_caption": "a dog"},
                ],
            },
            "qa": [
                {"question": "q1", "answer": "x", "evidence": ["D1:2"], "category": 4},
                {"question": "q2", "answer": "y", "evidence": ["D7:1"], "category": 1},
            ],
        }
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    (conv,) = locomo.load(path)  # type: ignore[attr-defined]
    assert [t["dia"] for t in conv["turns"]] == ["D1:1", "D1:2"]
    assert conv["turns"][1]["text"] == "look [image: a dog]"
    assert (conv["turns"][1]["time"] - conv["turns"][0]["time"]).total_seconds() == 1
    assert conv["turns"][0]["time"].year == 2023 and conv["turns"][0]["time"].hour == 13
    assert [q["question"] for q in conv["questions"]] == ["q1"]


def test_recall_at_k(locomo: object) -> None:
    scores = locomo.Scores()  # type: ignore[attr-defined]
    scores.add(1, ["a", "b", "c", "d", "e", "f"], ["a", "z"])
    scores.add(4, ["x"] * 20, ["y"])
    assert scores.value(5, (1,)) == 50.0
    assert scores.value(10) == 25.0
