"""A refused upload is shown in the upload's own form on the project's board, with the project's
navigation, never on a bare page; it changes nothing."""
import json
import re

import pytest

from datasets_app.models import InstructionFamily, ModelOutput, ReviewSet

from .test_uploads import family_line, owner_client, predictions_csv, upload, verified  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

SHIFT_JIS = "instruction,image,new-vlm prediction\n\"数えてください\",https://example.org/a.png,\"三つ\"\n".encode("shift_jis")


def shown_in_form(body: str, what: str) -> str:
    """The text of the refusal inside the upload's own form (fails when it is not there)."""
    form = re.search(rf'<form class="upload" id="upload-{what}".*?</form>', body, re.S)
    assert form, body[:1500]
    error = re.search(rf'<p class="notice" role="alert" id="upload-{what}-error">(.*?)</p>', form.group(0), re.S)
    assert error, form.group(0)
    return error.group(1)


@pytest.mark.parametrize(("what", "name", "content", "message"), [
    ("families", "families.jsonl", json.dumps({"name": "W"}) + "\n", "missing field"),
    ("predictions", "preds.csv", SHIFT_JIS, "preds.csv"),
    ("predictions", "preds.csv", "instruction,picture,new-vlm prediction\nx,y,z\n", "preds.csv"),
    ("review-sets", "reviews.jsonl", "{}\n", "reviews.jsonl"),
])
def test_a_refused_upload_is_shown_in_its_own_form_on_the_board(owner_client, project, verified, what, name,
                                                                content, message):
    response = upload(owner_client, project, what, name, content)
    body = response.content.decode()
    assert response.status_code == 400
    assert message in shown_in_form(body, what)
    assert '<nav class="project-nav"' in body and f'href="/projects/{project.slug}/rounds/"' in body
    assert not ModelOutput.objects.exists() and not ReviewSet.objects.exists()
    # The form is far down the board: the top of the page says so and links the refusal.
    top = re.search(r'<p class="notice" role="alert" id="upload-refused">(.*?)</p>', body, re.S)
    assert top and f'href="#upload-{what}-error"' in top.group(1), body[:2000]
    assert body.index('id="upload-refused"') < body.index('id="stages-title"')


def test_a_duplicate_family_name_is_refused_in_the_families_form(owner_client, project):
    assert upload(owner_client, project, "families", "families.jsonl", family_line() + "\n").status_code == 302
    response = upload(owner_client, project, "families", "again.jsonl", family_line() + "\n")
    assert response.status_code == 400 and "a family named" in shown_in_form(response.content.decode(), "families")
    assert InstructionFamily.objects.filter(project=project).count() == 1
