"""Who sees what in the cockpit: researchers their own projects only, workers and strangers nothing."""
import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from projects.models import Membership, Project

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db

PROJECT_PAGES = ["project", "rounds", "review", "workers", "results", "releases", "members"]


def test_anonymous_is_sent_to_log_in(client, project):
    response = client.get(reverse("cockpit:project", args=[project.slug]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_worker_is_refused_with_a_message(client, django_user_model, settings, project):
    worker = django_user_model.objects.create_user(username="w1", password=PASSWORD)
    worker.groups.add(Group.objects.get_or_create(name=settings.ANNOTATION_WORKER_GROUP)[0])
    client.force_login(worker)
    response = client.get(reverse("cockpit:projects"))
    assert response.status_code == 403
    assert "Only researchers" in response.content.decode()


@pytest.mark.parametrize("page", PROJECT_PAGES)
def test_member_sees_every_project_page(client, researcher, project, page):
    client.force_login(researcher)
    response = client.get(reverse(f"cockpit:{page}", args=[project.slug]))
    assert response.status_code == 200
    assert project.name in response.content.decode()


@pytest.mark.parametrize("page", PROJECT_PAGES)
def test_researcher_of_another_project_gets_not_found(client, make_researcher, project, page):
    stranger = make_researcher("eve")
    client.force_login(stranger)
    response = client.get(reverse(f"cockpit:{page}", args=[project.slug]))
    assert response.status_code == 404
    assert project.name not in response.content.decode()
    assert project.slug not in reverse("cockpit:projects") and "Study A" not in client.get(reverse("cockpit:projects")).content.decode()


def test_create_project_makes_the_creator_owner(client, researcher):
    client.force_login(researcher)
    response = client.post(reverse("cockpit:project-new"), {"name": "Study B", "slug": "study-b", "description": "x"})
    assert response.status_code == 302
    project = Project.objects.get(slug="study-b")
    assert Membership.objects.get(project=project, user=researcher).role == Membership.Role.OWNER


def test_bad_slug_is_a_form_error_and_creates_nothing(client, researcher):
    client.force_login(researcher)
    response = client.post(reverse("cockpit:project-new"), {"name": "Bad", "slug": "no spaces/allowed"})
    assert response.status_code == 200
    assert "slug" in response.content.decode().lower()
    assert not Project.objects.filter(name="Bad").exists()


def test_owner_adds_a_collaborator_who_cannot_manage(client, researcher, make_researcher, project):
    grace = make_researcher("grace")
    client.force_login(researcher)
    response = client.post(reverse("cockpit:members", args=[project.slug]), {"username": "grace", "role": "collaborator"})
    assert response.status_code == 302
    client.force_login(grace)
    assert client.get(reverse("cockpit:project", args=[project.slug])).status_code == 200
    refused = client.post(reverse("cockpit:members", args=[project.slug]), {"username": "grace", "role": "owner"})
    assert refused.status_code == 403
    assert Membership.objects.get(project=project, user=grace).role == Membership.Role.COLLABORATOR


def test_a_user_who_is_not_a_researcher_cannot_be_added(client, researcher, project, django_user_model):
    django_user_model.objects.create_user(username="walt", password="pw-12345678")
    client.force_login(researcher)
    response = client.post(reverse("cockpit:members", args=[project.slug]), {"username": "walt", "role": "collaborator"})
    assert response.status_code == 400 and "is not a researcher" in response.content.decode()
    assert not Membership.objects.filter(project=project, user__username="walt").exists()


def test_last_owner_cannot_be_removed(client, researcher, project):
    client.force_login(researcher)
    membership = Membership.objects.get(project=project, user=researcher)
    url = reverse("cockpit:members", args=[project.slug])
    response = client.post(url, {"remove": membership.pk})
    assert response.status_code == 302 and response["Location"] == url
    page = client.get(url).content.decode()
    assert f"{researcher.get_username()} was not removed: &#x27;{project.slug}&#x27; needs at least one owner." in page
    assert Membership.objects.filter(pk=membership.pk).exists()
    # Demoting the last owner is a form error on the same page, the input kept.
    response = client.post(url, {"username": researcher.get_username(), "role": "collaborator"})
    assert response.status_code == 400 and "needs at least one owner" in response.content.decode()
    assert Membership.objects.get(pk=membership.pk).role == Membership.Role.OWNER


def test_remove_asks_for_confirmation(client, researcher, project):
    client.force_login(researcher)
    page = client.get(reverse("cockpit:members", args=[project.slug])).content.decode()
    assert f'data-confirm="Remove {researcher.get_username()} from this project?"' in page
    assert "cockpit/confirm.js" in page


def test_every_fixed_cockpit_page_is_a_reserved_project_slug():
    """A project slugged like a fixed page under /projects/ could never be opened."""
    from cockpit.urls import urlpatterns
    from projects.services import RESERVED_SLUGS

    fixed = {str(pattern.pattern).strip("/").split("/")[0] for pattern in urlpatterns}
    fixed = {segment for segment in fixed if segment and not segment.startswith("<")}
    assert fixed and fixed <= RESERVED_SLUGS


def test_reserved_slug_is_a_form_error(client, researcher):
    client.force_login(researcher)
    response = client.post(reverse("cockpit:project-new"), {"name": "Tokens", "slug": "api-tokens"})
    assert response.status_code == 200
    assert "reserved" in response.content.decode()
    assert not Project.objects.filter(slug="api-tokens").exists()
