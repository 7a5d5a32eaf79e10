"""Fuzzing fixtures: the researcher API's ``world`` (a project with data behind every endpoint)."""
from tests.annotation.conftest import media_in_tmp  # noqa: F401  (autouse fixture)
from tests.api.conftest import owner_api, releases_in_tmp, study, world  # noqa: F401
from tests.cockpit.conftest import collaborator, make_researcher, project, researcher  # noqa: F401
