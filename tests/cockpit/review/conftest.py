"""Review-queue tests: the provider fakes (MTurk, Prolific) and their settings, and the browser."""
from tests.cockpit.browser.conftest import browser, page, served_media  # noqa: F401  (fixtures)
from tests.providers.conftest import mturk_fake, prolific_fake, provider_settings  # noqa: F401  (fixtures)
