"""Leaderboard submission tests: the cockpit's researchers and projects, the board's judged
instances and the local fake OpenAI server answering as a judge."""
from tests.annotation.conftest import media_in_tmp  # noqa: F401  (autouse fixture)
from tests.cockpit.board.conftest import fake_server, llm_settings  # noqa: F401  (fixtures)
from tests.cockpit.conftest import collaborator, make_researcher, project, researcher  # noqa: F401  (fixtures)
