"""Round pages publish to the provider fakes: the providers' test settings and fakes."""
from tests.providers.conftest import mturk_fake, prolific_fake, provider_settings  # noqa: F401  (fixtures)
