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
