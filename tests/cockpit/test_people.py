"""People, from the cockpit: an owner makes accounts for a researcher or a local worker, who set
their own password on a one-time link; nobody else may, and a refusal writes nothing."""
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.models import Worker
from projects.models import Membership
from projects.permissions import is_researcher

pytestmark = pytest.mark.django_db
User = get_user_model()


def shown_link(response) -> str:
    match = re.search(r'<code id="new-link">http://testserver(/accounts/reset/[^<]+)</code>', response.content.decode())
    assert match, response.content.decode()[:3000]
    return match.group(1)


def set_password_on(link: str, password: str = "A-long-new-passphrase-42") -> Client:
    """Open the link in another browser, as the person it was sent to, and set the password."""
    browser = Client()
    form_page = browser.get(link, follow=True)
    assert form_page.status_code == 200 and 'id="set-password-form"' in form_page.content.decode()
    done = browser.post(form_page.redirect_chain[-1][0] if form_page.redirect_chain else link,
                        {"new_password1": password, "new_password2": password}, follow=True)
    assert "Your password is set" in done.content.decode()
    return browser


def test_an_owner_invites_a_researcher_who_sets_a_password_on_a_one_time_link(client, researcher, project):
    client.force_login(researcher)
    response = client.post(reverse("cockpit:member-invite", args=[project.slug]),
                           {"username": "rita", "email": "rita@example.org", "role": "collaborator"})
    assert response.status_code == 200 and response["Cache-Control"].startswith("max-age=0")
    link = shown_link(response)
    rita = User.objects.get(username="rita")
    assert not rita.has_usable_password() and is_researcher(rita)
    assert Membership.objects.get(project=project, user=rita).role == "collaborator"
    # The link is shown once: the members page does not show it again.
    assert 'id="new-link"' not in client.get(reverse("cockpit:members", args=[project.slug])).content.decode()

    set_password_on(link)
    assert Client().login(username="rita", password="A-long-new-passphrase-42")
    used = Client().get(link, follow=True).content.decode()
    assert "This link no longer works" in used and 'id="set-password-form"' not in used


def test_an_owner_makes_a_local_worker_who_can_then_log_in_and_work(client, researcher, project):
    client.force_login(researcher)
    response = client.post(reverse("cockpit:worker-new", args=[project.slug]),
                           {"username": "wes", "languages": ["ja"], "qualify": "on"})
    assert response.status_code == 200
    link = shown_link(response)
    worker = Worker.objects.get(user__username="wes")
    assert worker.languages == ["ja"] and worker.qualifications.filter(project=project).exists()
    page = response.content.decode()
    assert f'href="{reverse("cockpit:worker", args=[project.slug, worker.pk])}">wes</a>' in page  # listed
    browser = set_password_on(link)
    assert browser.login(username="wes", password="A-long-new-passphrase-42")
    assert browser.get(reverse("annotation:work-list")).status_code == 200


@pytest.mark.parametrize("username", ["", "bad name!", "x" * 151])
def test_a_bad_or_taken_user_name_is_refused_at_the_form_and_writes_nothing(client, researcher, project, username):
    client.force_login(researcher)
    before = User.objects.count()
    for url in (reverse("cockpit:worker-new", args=[project.slug]),
                reverse("cockpit:member-invite", args=[project.slug])):
        response = client.post(url, {"username": username, "role": "collaborator"})
        assert response.status_code == 400 and 'id="new-link"' not in response.content.decode()
        assert '<nav class="project-nav"' in response.content.decode()
    taken = client.post(reverse("cockpit:worker-new", args=[project.slug]), {"username": researcher.username.upper()})
    assert taken.status_code == 400 and "is taken" in taken.content.decode()
    assert User.objects.count() == before and not Worker.objects.exists()


def test_only_owners_make_accounts(client, collaborator, make_researcher, project):
    client.force_login(collaborator)
    assert client.post(reverse("cockpit:worker-new", args=[project.slug]), {"username": "w1"}).status_code == 403
    assert client.post(reverse("cockpit:member-invite", args=[project.slug]),
                       {"username": "r1", "role": "owner"}).status_code == 403
    client.force_login(make_researcher("stranger"))
    assert client.post(reverse("cockpit:worker-new", args=[project.slug]), {"username": "w1"}).status_code == 404
    assert not User.objects.filter(username__in=["w1", "r1"]).exists()
