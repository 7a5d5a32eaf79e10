from tests.annotation.browser.conftest import browser, log_in, page, served_media  # noqa: F401  (fixtures)

from ..conftest import PASSWORD


def log_in_researcher(page, username: str, next_url: str = "/projects/") -> None:
    log_in(page, username, PASSWORD, next_url)
