"""The LLM judge's battle file (``manage.py judge --json``) read and checked for metric agreement.

Shape: ``{"battles": [{"instance_id": 12, "model_a": "...", "model_b": "...",
"verdicts": [v1, v2], "winner": "model_a" | "model_b" | "tie"}, ...], ...}``. Only the fields
used here are checked; every refusal names the file and the field (``battles[3].winner``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

JUDGE_WINNERS = ("model_a", "model_b", "tie")
# The judge file is a report of at most a few hundred thousand battles, not a stream.
MAX_JUDGE_FILE_BYTES = 256 * 1024 * 1024


class InvalidJudgeFile(ValueError):
    """A judge file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class JudgeBattle:
    instance_id: int
    model_a: str
    model_b: str
    winner: str


def read_judge_file(path: str | Path) -> list[JudgeBattle]:
    path = Path(path)
    if not path.is_file():
        raise InvalidJudgeFile(f"{path}: no such file")
    if path.stat().st_size > MAX_JUDGE_FILE_BYTES:
        raise InvalidJudgeFile(f"{path}: larger than {MAX_JUDGE_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InvalidJudgeFile(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise InvalidJudgeFile(f"{path}: invalid JSON at line {error.lineno}, column {error.colno} ({error.msg})") from None
    except RecursionError:
        raise InvalidJudgeFile(f"{path}: JSON nested too deeply") from None
    if not isinstance(document, dict):
        raise InvalidJudgeFile(f"{path}: expected a JSON object with a 'battles' list")
    battles = document.get("battles")
    if not isinstance(battles, list):
        raise InvalidJudgeFile(f"{path}: field 'battles': expected a list of battles")
    parsed, seen = [], {}
    for index, battle in enumerate(battles):
        where = f"{path}: battles[{index}]"
        if not isinstance(battle, dict):
            raise InvalidJudgeFile(f"{where}: expected an object")
        instance_id = battle.get("instance_id")
        if isinstance(instance_id, str) and instance_id.isascii() and instance_id.isdigit():
            instance_id = int(instance_id)
        if isinstance(instance_id, bool) or not isinstance(instance_id, int) or instance_id < 1:
            raise InvalidJudgeFile(f"{where}.instance_id: expected a positive integer, got {instance_id!r:.60}")
        names = []
        for side in ("model_a", "model_b"):
            name = battle.get(side)
            if not isinstance(name, str) or not name.strip():
                raise InvalidJudgeFile(f"{where}.{side}: expected a model name, got {name!r:.60}")
            names.append(name)
        if names[0] == names[1]:
            raise InvalidJudgeFile(f"{where}.model_b: the same model as model_a ({names[0]!r:.60})")
        winner = battle.get("winner")
        if winner not in JUDGE_WINNERS:
            raise InvalidJudgeFile(f"{where}.winner: expected one of {', '.join(JUDGE_WINNERS)}, got {winner!r:.60}")
        key = (instance_id, frozenset(names))
        if key in seen:
            raise InvalidJudgeFile(f"{where}: the same pair as battles[{seen[key]}] (instance {instance_id})")
        seen[key] = index
        parsed.append(JudgeBattle(instance_id, names[0], names[1], winner))
    if not parsed:
        raise InvalidJudgeFile(f"{path}: field 'battles': no battles")
    return parsed
