import io
import json

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def yield_json():
    out = io.StringIO()
    call_command("yield_report", "--json", stdout=out)
    return json.loads(out.getvalue())


def test_multi_image_file_reproduces_paper_table_2(shared_data):
    call_command("import_visitbench", str(shared_data / "visit_bench_multi_images.csv"), stdout=io.StringIO())
    report = yield_json()
    multi = report["splits"]["multi_image"]
    assert multi["candidates"] == 100
    assert (multi["kept_pct"], multi["caption_problem_pct"], multi["response_problem_pct"]) == (63.0, 6.0, 30.0)
    assert report["splits"]["single_image"]["candidates"] == 0
    assert report["splits"]["all"]["kept_pct"] == 63.0


def test_empty_database_reports_zeros():
    report = yield_json()
    assert set(report["splits"]) == {"single_image", "multi_image", "all"}
    assert report["splits"]["all"] == {
        "candidates": 0, "kept_pct": 0.0, "caption_problem_pct": 0.0,
        "response_problem_pct": 0.0, "harmful_pct": 0.0,
    }


def test_table_output(shared_data):
    call_command("import_visitbench", str(shared_data / "visit_bench_multi_images.csv"), stdout=io.StringIO())
    out = io.StringIO()
    call_command("yield_report", stdout=out)
    line = [l for l in out.getvalue().splitlines() if l.startswith("multi-image")][0]
    assert line.split() == ["multi-image", "100", "63.0", "6.0", "30.0"]


def test_source_filter_separates_imported_from_other_data(shared_data):
    from demo.data import create_demo_data

    create_demo_data()  # one verified multi-image instance entered by a researcher
    call_command("import_visitbench", str(shared_data / "visit_bench_multi_images.csv"), stdout=io.StringIO())
    assert yield_json()["splits"]["multi_image"]["candidates"] == 101
    out = io.StringIO()
    call_command("yield_report", "--json", "--source", "imported", stdout=out)
    multi = json.loads(out.getvalue())["splits"]["multi_image"]
    assert (multi["candidates"], multi["kept_pct"], multi["caption_problem_pct"], multi["response_problem_pct"]) == (100, 63.0, 6.0, 30.0)


def test_a_correct_but_harmful_verdict_is_not_kept():
    from demo.data import create_demo_data
    from datasets_app.models import Verification

    create_demo_data()  # four verified instances, one verdict each
    single = Verification.objects.filter(
        is_aggregate=True, candidate__instance__family__is_multi_image=False
    ).first()
    single.harmful = True
    single.save()
    report = yield_json()["splits"]["single_image"]
    assert report["candidates"] == 3
    assert (report["kept_pct"], report["harmful_pct"]) == (66.7, 33.3)
