"""Projects, members and scoping: a researcher sees only their projects; workers see none."""
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import RequestFactory

from annotation import selectors as work
from annotation.services.rounds import create_round
from datasets_app import selectors as data
from projects import selectors
from projects.errors import ProjectConflict, ProjectError, ProjectNotFound, ProjectPermissionDenied
from projects.models import Membership, Project
from projects.permissions import IsProjectMember, require_owner
from projects.services import create_project, remove_member, set_member
from tests.annotation.factories import make_family, make_instance, make_outputs, make_review_set, make_worker_user

pytestmark = pytest.mark.django_db


def owned_data(project):
    family = make_family(project=project)
    instance = make_instance(family=family)
    outputs = make_outputs(instance=instance)
    review_set = make_review_set(project=project)
    round_ = create_round(name=f"{project.slug} round", task_type="ranking", project=project)
    return family, instance, outputs, review_set, round_


def test_members_see_only_their_projects_and_workers_see_none():
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    worker = make_worker_user("worker")
    mine = create_project(name="Mine", slug="mine", owner=alice)
    theirs = create_project(name="Theirs", slug="theirs", owner=bob)
    family, instance, outputs, review_set, round_ = owned_data(mine)
    owned_data(theirs)

    assert list(selectors.projects_for_user(alice)) == [mine]
    assert list(data.families_for_user(alice)) == [family]
    assert list(data.instances_for_user(alice)) == [instance]
    assert set(data.model_outputs_for_user(alice)) == set(outputs)
    assert list(data.review_sets_for_user(alice)) == [review_set]
    assert list(work.rounds_for_user(alice)) == [round_]
    for reader in (selectors.projects_for_user, data.families_for_user, data.instances_for_user,
                   data.review_sets_for_user, work.rounds_for_user, selectors.releases_for_user):
        assert not reader(worker).exists()
        assert {selectors.project_of(obj) for obj in reader(bob)} <= {theirs}
    with pytest.raises(ProjectNotFound):
        selectors.get_project_for_user(user=bob, slug="mine")
    with pytest.raises(ProjectNotFound):
        selectors.get_project_for_user(user=worker, slug="mine")
    assert selectors.get_project_for_user(user=alice, slug="mine") == mine

    permission = IsProjectMember()
    request = RequestFactory().get("/")
    request.user = bob
    assert not permission.has_object_permission(request, None, instance)
    request.user = alice
    assert permission.has_object_permission(request, None, instance)
    set_member(project=mine, user=bob, role=Membership.Role.COLLABORATOR)
    request.user = bob
    assert permission.has_object_permission(request, None, outputs[0])
    write = RequestFactory().post("/")
    write.user = bob
    assert not permission.has_object_permission(write, None, review_set)
    with pytest.raises(ProjectPermissionDenied):
        require_owner(user=bob, project=mine)


def test_project_services_refuse_bad_requests_and_keep_an_owner():
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    project = create_project(name="Study", slug="study", owner=alice)
    assert len(project.pseudonym_secret) == 64
    assert project.pseudonym_secret != create_project(name="Other", slug="other", owner=alice).pseudonym_secret
    with pytest.raises(ProjectConflict):
        create_project(name="Again", slug="study", owner=bob)
    with pytest.raises(ProjectError, match="slug"):
        create_project(name="Bad", slug="no spaces\x00", owner=bob)
    with pytest.raises(ProjectConflict, match="at least one owner"):
        remove_member(project=project, user=alice)
    with pytest.raises(ProjectConflict):
        set_member(project=project, user=alice, role=Membership.Role.COLLABORATOR)
    with pytest.raises(ProjectError, match="Unknown role"):
        set_member(project=project, user=bob, role="admin")
    set_member(project=project, user=bob, role=Membership.Role.OWNER)
    remove_member(project=project, user=alice)
    assert list(project.memberships.values_list("user__username", "role")) == [("bob", "owner")]
    assert Project.objects.count() == 2


def test_admin_never_shows_the_pseudonym_secret(client):
    admin = User.objects.create_superuser("root", password="pw-123456")
    project = create_project(name="Study", slug="study", owner=admin)
    client.force_login(admin)
    page = client.get(f"/admin/projects/project/{project.pk}/change/")
    assert page.status_code == 200 and b"Study" in page.content
    assert project.pseudonym_secret.encode() not in page.content
    assert project.pseudonym_secret not in repr(project) + str(project)


def test_commands_take_a_project(tmp_path, shared_data):
    User.objects.create_user("alice")
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("create_project", "p1", "--owner", "nobody")
    call_command("create_project", "p1", "--owner", "alice")
    call_command("create_project", "p2", "--owner", "alice")
    with pytest.raises(CommandError, match="exists"):
        call_command("create_project", "p1", "--owner", "alice")
    sheet = str(shared_data / "visit_fully_annotated_example.csv")
    with pytest.raises(CommandError, match="--project: No project with slug 'nope'"):
        call_command("import_visitbench", sheet, "--project", "nope")
    call_command("import_visitbench", sheet, "--project", "p1")
    assert set(Project.objects.get(slug="p1").families.values_list("project__slug", flat=True)) == {"p1"}
    call_command("import_visitbench", sheet, "--project", "p1")  # idempotent
    # The same sheet in another project: its own families, instances and images.
    call_command("import_visitbench", sheet, "--project", "p2")
    assert Project.objects.get(slug="p2").families.count() == Project.objects.get(slug="p1").families.count() == 10

    reviews = tmp_path / "reviews.csv"
    reviews.write_text(
        "item_id,language,category,image_url,license,review_1,review_2,review_3,review_4,review_5\n"
        "r1,en,art,https://images.example.org/r1.png,CC0-1.0,a,b,c,d,e\n", encoding="utf-8")
    call_command("import_reviews", str(reviews), "--project", "p1")
    call_command("import_reviews", str(reviews), "--project", "p2")
    call_command("import_reviews", str(reviews), "--project", "p2")  # idempotent within the project
    assert Project.objects.get(slug="p1").review_sets.count() == Project.objects.get(slug="p2").review_sets.count() == 1
    assert Project.objects.get(slug="p2").review_sets.get().image.project.slug == "p2"


def test_demo_data_lives_in_the_demo_project():
    call_command("load_demo", stdout=open("/dev/null", "w"))
    project = Project.objects.get(slug="demo")
    assert project.memberships.get().user.username == "researcher"
    assert project.memberships.get().role == Membership.Role.OWNER
    assert project.families.count() == 2 and project.review_sets.count() == 2
    assert project.rounds.count() == 6
    call_command("load_demo", stdout=open("/dev/null", "w"))  # again: the same project
    assert Project.objects.count() == 1
