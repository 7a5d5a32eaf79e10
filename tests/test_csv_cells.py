"""kernel.csv_cells: OWASP's CSV injection rule for text cells; numbers untouched; reversible."""
import csv
import io

import pandas as pd
import pytest

from kernel.csv_cells import csv_writer, frame_to_csv, neutralise_csv_cell, restore_csv_cell


@pytest.mark.parametrize("text", ["=1+1", "+1", "-x", "@SUM(A1)", "\t=1", "\r=1", "'=x", "''-x", "'x", "x", "", "a=b"])
def test_neutralised_text_never_starts_a_formula_and_is_restored_exactly(text):
    cell = neutralise_csv_cell(text)
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert restore_csv_cell(cell) == text


def test_numbers_stay_numbers_and_a_lone_carriage_return_is_quoted():
    assert neutralise_csv_cell(-0.5) == -0.5 and neutralise_csv_cell(-3) == -3
    buffer = io.StringIO()
    writer = csv_writer(buffer, lineterminator="\n")
    writer.writerow(["-0.5 points", -0.5])
    writer.writerow(["\r=1", 2])
    assert list(csv.reader(io.StringIO(buffer.getvalue(), newline=""))) == [["'-0.5 points", "-0.5"], ["'\r=1", "2"]]
    frame = pd.DataFrame({"model": ["-m", "\r=n"], "score": [-0.5, 1.25]})
    back = pd.read_csv(io.StringIO(frame_to_csv(frame, index=False)))
    assert back["model"].tolist() == ["'-m", "'\r=n"] and back["score"].tolist() == [-0.5, 1.25]
