"""The site's own pages around the cockpit: the landing page leads researchers to it, and logging
out lands on crowdbench's page, not the admin's."""
import pytest
from django.urls import reverse

from .conftest import PASSWORD

pytestmark = pytest.mark.django_db


def test_the_landing_page_links_the_cockpit_for_a_visitor_not_yet_logged_in(client):
    html = client.get(reverse("home")).content.decode()
    assert f'href="{reverse("login")}?next={reverse("cockpit:projects")}"' in html


def test_the_cockpit_link_on_the_landing_page_leads_to_the_projects_after_login(client, researcher):
    response = client.post(reverse("login") + f"?next={reverse('cockpit:projects')}",
                           {"username": researcher.username, "password": PASSWORD,
                            "next": reverse("cockpit:projects")})
    assert response.status_code == 302 and response["Location"] == reverse("cockpit:projects")


@pytest.mark.parametrize("language, heading", [("en", "You are logged out"), ("ja", "ログアウトしました")])
def test_logging_out_lands_on_crowdbenchs_page_in_the_persons_language(client, researcher, language, heading):
    client.force_login(researcher)
    client.cookies["django_language"] = language
    response = client.post(reverse("logout"))
    html = response.content.decode()
    assert response.status_code == 200
    assert heading in html and "quality time" not in html and "Django administration" not in html
    assert f'href="{reverse("login")}" id="log-in-again"' in html


def test_a_refused_page_leads_back_to_where_the_person_was_when_that_is_this_site(client):
    """A worker who follows a cockpit link is refused on the one message page, with a way back."""
    from tests.annotation.factories import make_worker

    client.force_login(make_worker("wanda").user)
    response = client.get(reverse("cockpit:projects"), HTTP_REFERER="http://testserver/work/")
    page = response.content.decode()
    assert response.status_code == 403 and 'role="alert"' in page
    assert '<a href="http://testserver/work/" id="back-link">' in page
    page = client.get(reverse("cockpit:projects"), HTTP_REFERER="https://evil.example.org/").content.decode()
    assert 'id="back-link"' not in page and 'href="/"' in page


def test_a_workers_refusal_leads_back_to_the_list_of_work(client):
    from tests.annotation.factories import make_outputs, make_instance, make_round, make_worker

    outputs = make_outputs(instance=make_instance())
    draft = make_round(task_type="pairwise", targets=[tuple(outputs)], open=False)
    client.force_login(make_worker("walt").user)
    response = client.get(reverse("annotation:round", args=[draft.pk]))
    page = response.content.decode()
    assert 400 <= response.status_code < 500 and 'role="alert"' in page, page[:800]
    assert f'<a href="{reverse("annotation:work-list")}" id="back-link">Back to the list of work</a>' in page


def test_an_address_with_nothing_there_is_the_sites_page_not_a_bare_one(client):
    from tests.annotation.factories import make_worker

    client.force_login(make_worker("nora").user)
    response = client.get(reverse("annotation:round", args=[999999]))
    page = response.content.decode()
    assert response.status_code == 404
    assert 'class="site-header"' in page and "There is nothing at this address" in page and 'href="/"' in page
    assert client.get("/api/no-such-endpoint/").json() == {"detail": "Not found."}  # the API keeps JSON
