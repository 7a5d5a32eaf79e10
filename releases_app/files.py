"""The files of a release, without Django: table schemas, streamed JSONL + Parquet writers,
worker pseudonyms, what is left out and why, checksums and the dataset card.

Rows are written in batches (one Parquet row group per batch), so memory stays flat however many
rows a table has.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import BinaryIO, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

DEFAULT_BATCH_ROWS = 2000
SPLIT = "test"  # VisIT-Bench and IRR are evaluation sets

TABLES: dict[str, pa.Schema] = {
    "instances": pa.schema([
        ("instance_id", pa.int64()),
        ("instruction_category", pa.string()),
        ("instruction", pa.string()),
        ("is_multiple_images", pa.bool_()),
        ("images", pa.list_(pa.string())),
        ("instruction_conditioned_captions", pa.list_(pa.string())),
        ("reference_output", pa.string()),
        ("reference_origin", pa.string()),
        ("reference_model", pa.string()),
        ("language", pa.string()),
        ("source", pa.string()),
        ("public_images_metadata", pa.string()),
    ]),
    "irr_items": pa.schema([
        ("item_id", pa.int64()),
        ("external_id", pa.string()),
        ("language", pa.string()),
        ("category", pa.string()),
        ("image", pa.string()),
        # reviews[i] was generated for prompt rank i + 1
        ("reviews", pa.list_(pa.string())),
        ("annotators", pa.list_(pa.string())),
        # human_ranks[j][i]: the rank annotator j gave reviews[i] (1 = most reasonable and objective)
        ("human_ranks", pa.list_(pa.list_(pa.int64()))),
        ("best_pair", pa.list_(pa.string())),
        ("best_pair_rho", pa.float64()),
    ]),
    "battles": pa.schema([
        ("instance_id", pa.int64()),
        ("instruction_category", pa.string()),
        ("model_a", pa.string()),
        ("model_b", pa.string()),
        ("winner", pa.string()),
        ("left", pa.string()),
        ("worker", pa.string()),
        ("submitted_at", pa.string()),
        ("duration_seconds", pa.float64()),
    ]),
    "verifications": pa.schema([
        ("instance_id", pa.int64()),
        ("candidate_model", pa.string()),
        ("outcome", pa.string()),
        ("harmful", pa.bool_()),
        ("worker", pa.string()),
        ("submitted_at", pa.string()),
        ("duration_seconds", pa.float64()),
    ]),
    "rankings": pa.schema([
        ("item_id", pa.int64()),
        ("language", pa.string()),
        ("worker", pa.string()),
        ("prompt_rank", pa.int64()),
        ("rank", pa.int64()),
    ]),
    "images": pa.schema([
        ("image_id", pa.int64()),
        ("url", pa.string()),
        ("license", pa.string()),
        ("creator", pa.string()),
        ("source_url", pa.string()),
        ("sha256", pa.string()),
        ("width", pa.int64()),
        ("height", pa.int64()),
        ("included", pa.bool_()),
        ("excluded_reason", pa.string()),
    ]),
    # One row per instance, IRR item and image of the project that the release leaves out.
    "left_out": pa.schema([
        ("kind", pa.string()),  # instance, irr_item or image
        ("id", pa.int64()),
        ("reason", pa.string()),  # a key of LEFT_OUT_REASONS
        ("detail", pa.string()),  # the license, the instance's status, the agreement threshold, or ""
    ]),
}

TABLE_DESCRIPTIONS = {
    "instances": "verified VisIT-Bench instances: instruction, family, images, instruction-conditioned "
                 "captions and the human-verified reference",
    "irr_items": "IRR items kept by agreement filtering: five reviews, the human rankings, the best pair's rho",
    "battles": "human pairwise judgments (one row per judgment; winner is model_a or model_b)",
    "verifications": "crowd verifications of LLM reference candidates",
    "rankings": "human rankings of IRR reviews, long format",
    "images": "every image the data refers to, with license, creator, source and checksum; "
              "included = false marks images left out because of their license",
    "left_out": "every instance, IRR item and image of the project left out of this release, with the reason",
}


# --- pseudonyms --------------------------------------------------------------------------------


def pseudonym(secret: str, provider: str, external_id: str) -> str:
    """HMAC-SHA256 of the provider's worker id keyed with the project's secret: stable within a
    project, different across projects, not reversible without the secret."""
    digest = hmac.new(secret.encode("utf-8"), f"{provider}:{external_id}".encode("utf-8"), hashlib.sha256)
    return "w_" + digest.hexdigest()[:24]


# --- what is left out ---------------------------------------------------------------------------

LEFT_OUT_KINDS = {"instance": "instances", "irr_item": "IRR items", "image": "images"}
# Reasons, in the order they are checked: an instance or item is counted under the first that applies.
LEFT_OUT_REASONS = {
    "not_verified": "not verified ({detail})",
    "gold": "gold or attention-check item",
    "no_license": "no license recorded",
    "license_not_publishable": "license {detail} does not allow publishing",
    "license_unknown": "license {detail!r} is not a known license",
    "not_ranked": "not ranked by the crowd",
    "no_annotator_pair": "ranked by fewer than two workers",
    "low_agreement": "crowd agreement below the threshold (best-pair rho < {detail})",
}
IMAGE_REASONS = ("no_license", "license_not_publishable", "license_unknown")


def left_out_label(kind: str, reason: str, detail: str = "") -> str:
    """Why something was left out, as the command, the cockpit and the card say it; an instance or
    item left out because of one of its images says so ("image: license … does not allow publishing")."""
    label = LEFT_OUT_REASONS[reason].format(detail=detail)
    return f"image: {label}" if reason in IMAGE_REASONS and kind != "image" else label


def left_out_summary(tally: dict[tuple[str, str, str], int]) -> list[dict]:
    """Counts per (kind, reason, detail), in kind order, the largest first: what ``counts["left_out_reasons"]``
    of a release holds."""
    kinds = list(LEFT_OUT_KINDS)
    rows = [{"kind": kind, "reason": reason, "detail": detail, "what": LEFT_OUT_KINDS[kind],
             "why": left_out_label(kind, reason, detail), "count": count}
            for (kind, reason, detail), count in tally.items()]
    return sorted(rows, key=lambda row: (kinds.index(row["kind"]), -row["count"], row["why"]))


# --- streamed tables ---------------------------------------------------------------------------


class TableWriter:
    """One table written as ``data/NAME.jsonl`` and ``data/NAME.parquet``, a batch at a time."""

    def __init__(self, directory: Path, name: str, *, batch_rows: int = DEFAULT_BATCH_ROWS):
        self.name, self.schema, self.batch_rows = name, TABLES[name], batch_rows
        data = directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        self.jsonl_path, self.parquet_path = data / f"{name}.jsonl", data / f"{name}.parquet"
        self._jsonl = self.jsonl_path.open("w", encoding="utf-8", newline="\n")
        self._parquet = pq.ParquetWriter(self.parquet_path, self.schema, compression="zstd")
        self._buffer: list[dict] = []
        self.rows = 0

    def add(self, row: dict) -> None:
        self._buffer.append(row)
        if len(self._buffer) >= self.batch_rows:
            self.flush()

    def extend(self, rows: Iterable[dict]) -> None:
        for row in rows:
            self.add(row)

    def flush(self) -> None:
        if not self._buffer:
            return
        self._parquet.write_table(pa.Table.from_pylist(self._buffer, schema=self.schema))
        self._jsonl.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in self._buffer))
        self.rows += len(self._buffer)
        self._buffer.clear()

    def close(self) -> int:
        self.flush()
        self._parquet.close()
        self._jsonl.close()
        return self.rows

    def abort(self) -> None:
        self._buffer.clear()
        self._parquet.close()
        self._jsonl.close()


# --- checksums ---------------------------------------------------------------------------------


SUMS_FILE = "SHA256SUMS"


def sha256_of_handle(handle: BinaryIO) -> str:
    """SHA-256 of what is left to read in a binary file, read 1 MiB at a time."""
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return sha256_of_handle(handle)


def checksum_line(name: str, entry: dict) -> str:
    return f"{entry['sha256']}  {name}\n"


def write_checksums(directory: Path) -> dict[str, dict]:
    """Write ``SHA256SUMS`` (``sha256sum -c`` format) over every file; returns path -> sha256, bytes."""
    files = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        relative = path.relative_to(directory).as_posix()
        files[relative] = {"sha256": sha256_of(path), "bytes": path.stat().st_size}
    lines = "".join(checksum_line(name, entry) for name, entry in files.items())
    (directory / SUMS_FILE).write_text(lines, encoding="utf-8")
    return files


def checksums_match(content: bytes, files: dict[str, dict]) -> bool:
    """Whether ``content`` is a ``SHA256SUMS`` of exactly ``files`` (one line per file, any order:
    the database may keep the record's keys in another order than the file)."""
    try:
        lines = content.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return False
    expected = {checksum_line(name, entry) for name, entry in files.items()}
    return len(lines) == len(expected) and set(lines) == expected


# --- dataset card ------------------------------------------------------------------------------


def _yaml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid YAML scalar


def _markdown_cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_markdown_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def dataset_card(*, title: str, description: str, name: str, version: str, created_at: str,
                 configs: dict[str, str], csv_files: dict[str, str], stats: dict) -> str:
    """README.md with YAML metadata whose ``configs`` let ``datasets.load_dataset(DIR, CONFIG)``
    read every table offline, followed by what the release holds and how it was collected."""
    yaml = ["---", f"pretty_name: {_yaml_string(title)}", "configs:"]
    for config, path in configs.items():
        yaml += [f"- config_name: {config}", "  data_files:", f"  - split: {SPLIT}", f"    path: {path}"]
    yaml += ["---", ""]
    counts = stats["counts"]
    body = [
        f"# {title}",
        "",
        f"Release `{name}` version `{version}`, made {created_at}.",
        "",
        description.strip() or "A benchmark built with crowdbench.",
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'instances = load_dataset("path/to/this/folder", "instances")["{SPLIT}"]',
        "```",
        "",
        "Every table is also given as JSON Lines (`data/NAME.jsonl`); the VisIT-Bench instances also in "
        "the published CSV schemas:",
        "",
    ]
    body += [f"- `{path}` ({label})" for label, path in csv_files.items()] or ["- (no instances)"]
    body += ["", "The CSV files are made to be opened in a spreadsheet: a text cell that begins with `=`, "
             "`+`, `-`, `@`, a tab or a carriage return (which a spreadsheet would run as a formula) is "
             "written with one `'` in front (OWASP's CSV injection rule; a text that begins with `'` "
             "before one of those gets one more). Numbers are not changed. The JSON Lines and Parquet "
             "files hold every value exactly; use them, not the CSV files, for exact texts."]
    body += ["", "`SHA256SUMS` lists a checksum for every file (`sha256sum -c SHA256SUMS`).", "",
             "## Tables", ""]
    body.append(_markdown_table(
        ["config", "rows", "what"],
        [[table if table in configs else f"{table} (empty: files only, no config)", counts.get(table, 0),
          TABLE_DESCRIPTIONS[table]] for table in TABLES]))
    body += ["", "## Collection statistics", ""]
    body.append(_markdown_table(["what", "count"], [[key, value] for key, value in stats["summary"].items()]))
    body += ["", "### Pipeline yield (VisIT-Bench Table 2)", ""]
    body.append(_markdown_table(
        ["split", "candidates", "kept %", "caption problem %", "response problem %", "harmful %"],
        [[split, row["candidates"], row["kept_pct"], row["caption_problem_pct"], row["response_problem_pct"],
          row["harmful_pct"]] for split, row in stats["yield"].items()]))
    body += ["", "### Crowd agreement", ""]
    body.append(_markdown_table(["measure", "value"], [[key, value] for key, value in stats["agreement"].items()]))
    body += ["", "### Pay", ""]
    body.append(_markdown_table(
        ["round", "task", "submitted", "median seconds", "reward", "effective hourly wage", "target hourly wage"],
        stats["wages"]) if stats["wages"] else "No crowd rounds.")
    body += [
        "",
        "## Workers and privacy",
        "",
        "Worker ids are pseudonyms: HMAC-SHA256 of the crowd provider's worker id, keyed with a secret of "
        "the project that never leaves it. The same worker has the same pseudonym in every release of "
        "this project; the provider's id cannot be recovered from it. Gold and attention-check items "
        "and their judgments are not part of the release.",
        "",
        "## Images and licenses",
        "",
        "`data/images.*` lists every image with its license (an SPDX identifier; `PDM-1.0` is the "
        "Creative Commons Public Domain Mark), creator and source. Only images whose license allows "
        "publishing are included (public domain, CC0, CC BY, CC BY-SA, MIT, Apache-2.0); the others are "
        "listed with `included = false` and the reason, and the instances and items that show them are "
        "not in the release. A `sha256` is given for every image stored by the platform; images "
        "referenced only by URL have none.",
        "",
        "## What this release leaves out",
        "",
        f"{counts.get('instances_left_out', 0)} instances, {counts.get('irr_items_left_out', 0)} IRR items "
        f"and {counts.get('images_excluded', 0)} images of the project are not in this release; "
        "`data/left_out.*` lists each with its reason (an instance or item is counted under the first "
        "reason that applies).",
        "",
    ]
    left_out = counts.get("left_out_reasons") or []
    body.append(_markdown_table(["what", "why", "count"], [[row["what"], row["why"], row["count"]] for row in left_out])
                if left_out else "Nothing.")
    body.append("")
    return "\n".join(yaml + body)
