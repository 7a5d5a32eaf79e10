from tests.annotation.browser.conftest import browser, page, served_media  # noqa: F401  (fixtures)
from tests.annotation.conftest import media_in_tmp  # noqa: F401  (fixture)
