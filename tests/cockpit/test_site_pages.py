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
