"""Two researchers making the same release at the same moment, on PostgreSQL: one release, one refusal."""
import threading

import pytest
from django.contrib.auth.models import User
from django.db import connection

from datasets_app.models import AcceptedReference, Instance
from projects.errors import ReleaseExists
from projects.models import Release
from projects.services import create_project
from releases_app.services import make_release
from tests.annotation.factories import make_family, make_instance

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 6


def test_concurrent_requests_for_one_version_make_exactly_one_release(tmp_path):
    if connection.vendor != "postgresql":
        pytest.fail(f"this concurrency test needs PostgreSQL, but the database is {connection.vendor}")
    project = create_project(name="Race", slug="race", owner=User.objects.create_user("alice"))
    family = make_family(project=project)
    for _ in range(3):
        instance = make_instance(family=family)
        Instance.objects.filter(pk=instance.pk).update(status=Instance.Status.VERIFIED)
        AcceptedReference.objects.create(instance=instance, text="Answer.", origin="human_written")

    start = threading.Barrier(THREADS)
    outcomes: list[object] = []

    def attempt(number):
        try:
            start.wait()
            outcomes.append(make_release(project=project, name="race", version="1.0.0",
                                         out_dir=tmp_path / f"attempt-{number}"))
        except BaseException as error:  # collected and checked below
            outcomes.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    made = [o for o in outcomes if isinstance(o, Release)]
    refused = [o for o in outcomes if isinstance(o, ReleaseExists)]
    assert len(made) == 1 and len(refused) == THREADS - 1, outcomes
    assert Release.objects.count() == 1 and made[0].counts["instances"] == 3
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert folders == [made[0].directory.rsplit("/", 1)[1]]  # the refused attempts left nothing behind
