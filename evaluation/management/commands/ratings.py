"""``manage.py ratings FILE``: Elo or Bradley–Terry ratings of a battle file (CSV or JSON lines)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.selectors import BATTLE_SOURCES, HUMAN_ORIGINS
from kernel.input_checks import HostileInput, parse_json
from stats.ratings import InvalidBattlesError, RatingsResult, compute_ratings, encode_battles, plot_ratings

JSON_LINES_SUFFIXES = (".jsonl", ".json")


@dataclass(frozen=True)
class BattleFile:
    """Battles read from a file, with the way to name each row in messages."""

    path: Path
    frame: pd.DataFrame
    line_numbers: list[int] | None  # file line of each JSON-lines record; None for CSV

    def where(self, position: int) -> str:
        if self.line_numbers is None:
            return f"data row {position + 1}"
        return f"line {self.line_numbers[position]}"


def read_battle_file(path: Path) -> BattleFile:
    """Read a CSV (header row) or JSON-lines file of battles; every value stays a string for CSV."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        except pd.errors.EmptyDataError:
            raise CommandError(f"{path}: empty file") from None
        except (pd.errors.ParserError, UnicodeDecodeError) as error:
            raise CommandError(f"{path}: not a readable CSV file ({error})") from None
        if frame.empty:
            raise CommandError(f"{path}: empty file (a header but no data rows)")
        return BattleFile(path, frame, None)
    if suffix in JSON_LINES_SUFFIXES:
        records, line_numbers = [], []
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    # The reader of uploads and request bodies: nesting, number and text bounds.
                    record = parse_json(line, allow_nan=True)
                except HostileInput as refused:
                    field = f", field '{refused.field[:60]}'" if refused.field else ""
                    raise CommandError(f"{path}: line {number}{field}: {refused.message.rstrip('.')}") from None
                if not isinstance(record, dict):
                    raise CommandError(f"{path}: line {number}: expected a JSON object")
                records.append(record)
                line_numbers.append(number)
        if not records:
            raise CommandError(f"{path}: empty file")
        return BattleFile(path, pd.DataFrame.from_records(records), line_numbers)
    raise CommandError(f"{path}: unknown file type '{path.suffix}' (expected .csv, .jsonl or .json)")


def describe_error(battle_file: BattleFile, error: InvalidBattlesError) -> str:
    if error.position is None:
        return error.reason
    return f"{battle_file.where(error.position)}, field '{error.field}': {error.reason}"


def parse_anchor(text: str) -> tuple[str, float]:
    model, separator, rating = text.rpartition("=")
    try:
        value = float(rating)
    except ValueError:
        value = math.nan
    if not separator or not model or not math.isfinite(value):
        raise CommandError(f"--anchor must look like MODEL=RATING, got {text!r}")
    return model, value


def format_table(result: RatingsResult) -> str:
    frame = result.to_frame()
    has_interval = frame["ci_low"].notna().any()
    has_reference = "win_rate_vs_reference" in frame.columns
    header = ["rank", "model", "rating"]
    if has_interval:
        header.append("95% interval")
    header.append("battles")
    if has_reference:
        header.append(f"win rate vs {result.reference} (ties)")
    rows = []
    for model, row in frame.iterrows():
        cells = [str(int(row["rank"])), str(model), f"{row['rating']:.1f}"]
        if has_interval:
            cells.append(f"{row['ci_low']:.1f} .. {row['ci_high']:.1f}")
        cells.append(str(int(row["battles"])))
        if has_reference:
            if pd.isna(row["win_rate_vs_reference"]):
                cells.append("-" if model == result.reference else "no battles")
            else:
                cells.append(f"{row['win_rate_vs_reference']:.3f} ({row['ties_vs_reference']})")
        rows.append(cells)
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    right_aligned = {0, 2, 3} if has_interval else {0, 2}
    right_aligned.add(header.index("battles"))

    def render(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right_aligned else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([render(header), render(["-" * w for w in widths]), *(render(r) for r in rows)])


class Command(BaseCommand):
    help = (
        "Rate models from a battle file (CSV or JSON lines with model_a, model_b, winner and an "
        "optional category): online Elo or Bradley–Terry, optionally with bootstrap intervals."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "file", nargs="?", help="battles: .csv, or .jsonl/.json with one JSON object per line"
        )
        parser.add_argument(
            "--from-db", action="store_true",
            help="rate the battles stored in the database instead of a file (see --source)",
        )
        parser.add_argument("--source", choices=BATTLE_SOURCES, default="human",
                            help="with --from-db: the crowd's pairwise judgments (default) or the LLM judge's "
                                 "battles; the two are never mixed")
        parser.add_argument("--round", type=int, metavar="ROUND_ID", help="with --from-db: one round only")
        parser.add_argument("--origin", choices=HUMAN_ORIGINS,
                            help="with --source human: only judgments collected in rounds, or only imported ones "
                                 "(default: both)")
        parser.add_argument("--method", choices=["elo", "bt"], default="elo")
        parser.add_argument("--bootstrap", type=int, metavar="N", help="bootstrap rounds (e.g. 1000)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
        parser.add_argument("--anchor", metavar="MODEL=RATING", help="shift ratings so MODEL gets RATING")
        parser.add_argument("--reference", metavar="MODEL", help="also report the win rate against MODEL")
        parser.add_argument("--json", dest="json_path", metavar="OUT", help="write the ratings as JSON")
        parser.add_argument("--plot", dest="plot_path", metavar="OUT.png", help="write a PNG of the ratings")

    def handle(self, *args, **options) -> None:
        if bool(options["file"]) == bool(options["from_db"]):
            raise CommandError("give either a battle FILE or --from-db")
        if options["round"] is not None and not options["from_db"]:
            raise CommandError("--round goes with --from-db")
        if options["source"] != "human" and not options["from_db"]:
            raise CommandError("--source goes with --from-db")
        if options["round"] is not None and options["source"] != "human":
            raise CommandError("--round selects a crowd round: it goes with --source human")
        if options["origin"] is not None and (options["source"] != "human" or not options["from_db"]):
            raise CommandError("--origin selects human judgments: it goes with --from-db --source human")
        if options["origin"] == "imported" and options["round"] is not None:
            raise CommandError("--round selects collected judgments: it does not go with --origin imported")
        bootstrap = options["bootstrap"]
        if bootstrap is not None and bootstrap < 1:
            raise CommandError("--bootstrap must be at least 1")
        anchor = parse_anchor(options["anchor"]) if options["anchor"] else None

        if options["from_db"]:
            result = self._database_ratings(options, anchor)
        else:
            path = Path(options["file"])
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            battle_file = read_battle_file(path)
            try:
                battles = encode_battles(battle_file.frame)
            except InvalidBattlesError as error:
                raise CommandError(f"{path}: {describe_error(battle_file, error)}") from None
            for name, model in (("--anchor", anchor[0] if anchor else None), ("--reference", options["reference"])):
                if model is not None and model not in battles.models:
                    raise CommandError(f"{name}: model {model!r} does not appear in {path}")
            result = compute_ratings(
                battles,
                method=options["method"],
                bootstrap=bootstrap,
                seed=options["seed"],
                anchor=anchor,
                reference=options["reference"],
            )
        self.stdout.write(format_table(result))
        for message in result.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {message}"))
        if options["json_path"]:
            with open(options["json_path"], "w", encoding="utf-8") as out:
                json.dump(result.to_dict(), out, indent=2, allow_nan=False)
                out.write("\n")
            self.stdout.write(f"wrote {options['json_path']}")
        if options["plot_path"]:
            plot_ratings(result, options["plot_path"])
            self.stdout.write(f"wrote {options['plot_path']}")

    @staticmethod
    def _database_ratings(options, anchor) -> RatingsResult:
        from annotation.models import CollectionRound
        from annotation.task_types import task_type_keys_yielding
        from kernel.errors import ServiceError
        from evaluation.selectors import database_ratings

        round = None
        if options["round"] is not None:
            round = CollectionRound.objects.filter(
                pk=options["round"], task_type__in=task_type_keys_yielding("battles")).first()
            if round is None:
                raise CommandError(f"--round: no pairwise round with id {options['round']}")
        try:
            return database_ratings(source=options["source"], round=round, method=options["method"],
                                    bootstrap=options["bootstrap"], seed=options["seed"], anchor=anchor,
                                    reference=options["reference"], origin=options["origin"])
        except ServiceError as error:
            raise CommandError(error.message) from None
