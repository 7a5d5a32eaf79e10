"""Releases in the cockpit: owners make them from a form, members list and download them; a release is
made once per name and version, its files come back byte for byte, and no other file can be reached."""
import hashlib
import io
import subprocess
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse

from projects.models import Release

from .results_data import judged_project

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def releases_root(settings, tmp_path):
    settings.RELEASES_ROOT = tmp_path / "releases"
    return settings.RELEASES_ROOT


@pytest.fixture
def data(project):
    return judged_project(project)


def make(client, name="study", version="1.0.0"):
    return client.post(reverse("cockpit:releases", args=["study-a"]), {"name": name, "version": version})


def downloaded(response) -> bytes:
    return b"".join(response.streaming_content)


def test_owner_makes_a_release_and_members_download_every_file_intact(client, researcher, collaborator, data,
                                                                       releases_root):
    client.force_login(researcher)
    response = make(client)
    assert response.status_code == 302
    release = Release.objects.get(project__slug="study-a", name="study", version="1.0.0")
    assert Path(release.directory) == (releases_root / "study-a" / "study-1.0.0").resolve()
    assert release.created_by == researcher and release.counts["battles"] > 0

    client.force_login(collaborator)  # a collaborator reads and downloads
    page = client.get(reverse("cockpit:releases", args=["study-a"])).content.decode()
    assert "study 1.0.0" in page and all(entry["sha256"] in page for entry in release.files.values())
    counts = page.split('class="data compact counts"')[1].split("</table>")[0]
    assert f'<th scope="row">Battles</th><td>{release.counts["battles"]}</td>' in counts
    assert "<th scope=\"row\">Instances left out</th>" in counts and "_left_out" not in counts and "{&#x27;" not in counts
    assert '<th scope="row">IRR items left out</th>' in counts and "Irr" not in counts
    sums = downloaded(client.get(reverse("cockpit:release-file", args=["study-a", release.pk, "SHA256SUMS"])))
    listed = dict(reversed(line.split("  ", 1)) for line in sums.decode().splitlines())
    assert set(listed) == set(release.files) and listed
    for name, digest in listed.items():
        assert reverse("cockpit:release-file", args=["study-a", release.pk, name]) in page
        response = client.get(reverse("cockpit:release-file", args=["study-a", release.pk, name]))
        assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
        assert hashlib.sha256(downloaded(response)).hexdigest() == digest == release.files[name]["sha256"]


def test_the_same_name_and_version_again_is_a_409_and_changes_nothing(client, researcher, data, releases_root):
    client.force_login(researcher)
    assert make(client).status_code == 302
    folder = releases_root / "study-a" / "study-1.0.0"
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    again = make(client)
    assert again.status_code == 409 and "exists; releases never change" in again.content.decode()
    # Refused on the releases page itself, at the version typed, the form kept and the project's navigation on.
    page = again.content.decode()
    assert '<nav class="project-nav"' in page and 'value="1.0.0"' in page
    assert '<li class="error">Version: Release study 1.0.0' in page
    assert Release.objects.count() == 1
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before
    assert sorted(p.name for p in (releases_root / "study-a").iterdir()) == ["study-1.0.0"]


def test_collaborator_cannot_make_a_release(client, collaborator, data, releases_root):
    client.force_login(collaborator)
    page = client.get(reverse("cockpit:releases", args=["study-a"])).content.decode()
    assert "Make release" not in page
    assert make(client).status_code == 403
    assert not Release.objects.exists() and not releases_root.exists()


@pytest.mark.parametrize("name,version", [("../escape", "1.0.0"), ("study", "../../etc"), ("", "1.0.0"),
                                          ("study", "1 0"), ("a" * 101, "1.0.0")])
def test_bad_name_or_version_is_a_form_error_and_writes_nothing(client, researcher, project, releases_root,
                                                                 name, version):
    client.force_login(researcher)
    response = make(client, name=name, version=version)
    assert response.status_code == 400
    html = response.content.decode()
    assert ("Name:" in html) or ("Version:" in html)
    assert not Release.objects.exists() and not releases_root.exists()


def test_no_path_outside_the_release_can_be_downloaded(client, researcher, data, releases_root, settings):
    client.force_login(researcher)
    make(client)
    release = Release.objects.get()
    secret = releases_root / "study-a" / "secret.txt"
    secret.write_text("not part of the release")
    for relative in ("../secret.txt", "..%2Fsecret.txt", "%2e%2e/secret.txt", "/etc/passwd", "nope.csv",
                     "visitbench/../../secret.txt"):
        url = reverse("cockpit:release-file", args=["study-a", release.pk, "x"])[:-1] + relative
        response = client.get(url)
        assert response.status_code == 404, relative
        assert b"not part of the release" not in (downloaded(response) if response.streaming else response.content)


def test_releases_are_for_members_only(client, researcher, make_researcher, data):
    client.force_login(researcher)
    make(client)
    release = Release.objects.get()
    client.force_login(make_researcher("eve"))
    assert client.get(reverse("cockpit:releases", args=["study-a"])).status_code == 404
    assert client.get(reverse("cockpit:release-file", args=["study-a", release.pk, "SHA256SUMS"])).status_code == 404
    assert make(client).status_code == 404
    # A release of one project is not reachable under another, even by that project's owner.
    from projects.services import create_project

    create_project(name="Other", slug="other", owner=researcher)
    client.force_login(researcher)
    assert client.get(f"/projects/other/releases/{release.pk}/files/SHA256SUMS").status_code == 404


def test_a_release_file_edited_on_disk_is_refused_and_logged(client, researcher, data, releases_root, caplog):
    from tests.api.conftest import token_client

    client.force_login(researcher)
    make(client)
    release = Release.objects.get()
    folder = Path(release.directory)
    # One byte changed, the size kept: only the checksum tells.
    edited = folder / "release.json"
    edited.chmod(0o644)
    content = bytearray(edited.read_bytes())
    content[-2] = ord(" ") if content[-2] != ord(" ") else ord("\t")
    edited.write_bytes(bytes(content))
    # SHA256SUMS itself is checked against the release's record too.
    sums = folder / "SHA256SUMS"
    sums.chmod(0o644)
    sums.write_text(sums.read_text().replace(release.files["release.json"]["sha256"], "0" * 64))

    api = token_client(researcher)
    for name in ("release.json", "SHA256SUMS"):
        caplog.clear()
        page = client.get(reverse("cockpit:release-file", args=["study-a", release.pk, name]))
        assert page.status_code == 409 and not page.streaming
        assert f"{name}" in page.content.decode() and "does not match" in page.content.decode()
        answer = api.get(f"/api/releases/{release.pk}/files/{name}")
        assert answer.status_code == 409 and not answer.streaming
        assert name in answer.json()["detail"] and "does not match" in answer.json()["detail"]
        warnings = [record for record in caplog.records if record.levelname == "WARNING"
                    and name in record.getMessage() and "study 1.0.0" in record.getMessage()]
        assert len(warnings) == 2, [record.getMessage() for record in caplog.records]

    # The files left as they were are still served.
    intact = client.get(reverse("cockpit:release-file", args=["study-a", release.pk, "README.md"]))
    assert hashlib.sha256(downloaded(intact)).hexdigest() == release.files["README.md"]["sha256"]
    assert api.get(f"/api/releases/{release.pk}/files/README.md").status_code == 200


def test_the_whole_release_downloads_as_one_zip_that_unpacks_to_a_folder_its_users_can_check_and_load(
        client, researcher, collaborator, data, tmp_path, load_offline):
    client.force_login(researcher)
    make(client)
    release = Release.objects.get()
    client.force_login(collaborator)
    page = client.get(reverse("cockpit:releases", args=["study-a"])).content.decode()
    address = reverse("cockpit:release-archive", args=["study-a", release.pk])
    assert address in page
    response = client.get(address)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert 'filename="study-1.0.0.zip"' in response["Content-Disposition"]
    archive = tmp_path / "study-1.0.0.zip"
    archive.write_bytes(downloaded(response))
    with zipfile.ZipFile(archive) as unpacked:
        names = unpacked.namelist()
        unpacked.extractall(tmp_path / "unpacked")
    assert sorted(names) == sorted(f"study-1.0.0/{name}" for name in [*release.files, "SHA256SUMS"])
    folder = tmp_path / "unpacked" / "study-1.0.0"
    checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=folder, capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout.count(": OK") == len(release.files), checked.stdout
    battles = load_offline(folder, "battles")["battles"]
    assert len(battles) == release.counts["battles"] > 0

    # The API serves the same archive to a member's token.
    from tests.api.conftest import token_client

    answer = token_client(collaborator).get(f"/api/releases/{release.pk}/archive.zip")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(downloaded(answer))) as again:
        assert sorted(again.namelist()) == sorted(names)


def test_a_release_with_a_file_changed_on_disk_is_not_served_as_an_archive(client, researcher, data, caplog):
    client.force_login(researcher)
    make(client)
    release = Release.objects.get()
    edited = Path(release.directory) / "README.md"
    edited.chmod(0o644)
    edited.write_text(edited.read_text() + "\nedited\n")
    response = client.get(reverse("cockpit:release-archive", args=["study-a", release.pk]))
    assert response.status_code == 409 and not response.streaming
    assert "README.md" in response.content.decode() and "does not match" in response.content.decode()
    from tests.api.conftest import token_client

    answer = token_client(researcher).get(f"/api/releases/{release.pk}/archive.zip")
    assert answer.status_code == 409 and "README.md" in answer.json()["detail"]


def test_an_archive_of_a_release_of_another_project_is_not_found(client, researcher, make_researcher, data):
    client.force_login(researcher)
    make(client)
    release = Release.objects.get()
    outsider = make_researcher("outsider")
    client.force_login(outsider)
    assert client.get(reverse("cockpit:release-archive", args=["study-a", release.pk])).status_code in (403, 404)
    from tests.api.conftest import token_client

    assert token_client(outsider).get(f"/api/releases/{release.pk}/archive.zip").status_code == 404


@pytest.mark.database_sensitive  # ids beyond the column's range: PostgreSQL refuses them in SQL
@pytest.mark.parametrize("release_id", ["0", "2147483648", "9223372036854775808", "99999999999999999999999"])
def test_a_forged_release_id_for_an_archive_is_not_found(client, researcher, data, release_id):
    from tests.api.conftest import token_client

    client.force_login(researcher)
    make(client)
    assert client.get(f"/projects/study-a/releases/{release_id}.zip").status_code == 404
    assert token_client(researcher).get(f"/api/releases/{release_id}/archive.zip").status_code == 404
