"""Cockpit tests: media in a tmp folder, researchers and projects to act on, the shared browser."""
import pytest
from django.contrib.auth.models import Group

from projects.services import create_project, set_member
from tests.annotation.conftest import media_in_tmp  # noqa: F401  (autouse fixture)

PASSWORD = "cockpit-pass-123"


@pytest.fixture
def make_researcher(django_user_model, settings):
    def make(username: str):
        user = django_user_model.objects.create_user(username=username, password=PASSWORD)
        user.groups.add(Group.objects.get_or_create(name=settings.RESEARCHER_GROUP)[0])
        return user

    return make


@pytest.fixture
def researcher(make_researcher):
    return make_researcher("ada")


@pytest.fixture
def project(researcher):
    return create_project(name="Study A", slug="study-a", owner=researcher)


@pytest.fixture
def collaborator(make_researcher, project):
    user = make_researcher("grace")
    set_member(project=project, user=user)
    return user


@pytest.fixture
def dry_run_token():
    """Signs the token a dry run hands to the publish form, as the dry-run view does, without the
    rehearsal (5-9 s of simulated work). Tests of the rehearsal itself run it through the page."""
    from cockpit.views.rounds import _dry_run_token

    return _dry_run_token
