from tests.annotation.browser.conftest import browser, page, served_media  # noqa: F401  (fixtures)
