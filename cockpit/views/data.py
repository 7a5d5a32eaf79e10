"""The data browser: a project's families (with coverage against a target), instances by stage, images
with their licenses, IRR review sets and model outputs; searched, filtered and paged; each row with its
history in the crowd work, and edited or deleted while nothing uses it.

The reads are the owning apps' selectors (``datasets_app.selectors.browse_*``,
``annotation.selectors.item_history``), the writes their services (``datasets_app.curation``); a
refused edit or delete (a used row) is the cockpit's ``refused`` page with a way back, nothing changed;
a bad filter value is shown at its field on the list page itself (400).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from annotation.selectors import item_history
from annotation.watch import DEFAULT_COVERAGE_TARGET
from datasets_app import curation
from datasets_app import selectors as reads
from datasets_app.models import Image, Instance, InstructionFamily, Language, ReviewSet
from quality.selectors import worker_label

from ..access import is_owner, owned_project_for, project_for, researcher_required
from ..errors import BadQuery

PER_PAGE = 50
MAX_QUERY = 200


# --- filters ---------------------------------------------------------------------------------------


class _Filter(forms.Form):
    q = forms.CharField(required=False, max_length=MAX_QUERY, strip=True, label=_("Search"))

    def __init__(self, data, *, project):
        super().__init__(data)
        self.project = project

    def filters(self) -> dict:
        """The cleaned filters (call once ``is_valid``); a refused value (another project's family, an
        unknown stage, a target below 1) stays on the form, shown at its field."""
        return dict(self.cleaned_data)


def _choices(values, empty):
    return [("", empty)] + [(value, value) for value in values]


class FamilyFilter(_Filter):
    target = forms.IntegerField(required=False, min_value=1, max_value=100_000, label=_("Target per family"),
                                help_text=_("Verified instances a family should have (the paper aims at 10)."))


class InstanceFilter(_Filter):
    stage = forms.ChoiceField(required=False, choices=[("", _("every stage"))] + Instance.Status.choices,
                              label=_("Stage"))
    family = forms.ModelChoiceField(queryset=InstructionFamily.objects.none(), required=False, label=_("Family"),
                                    empty_label=_("every family"))

    def __init__(self, data, *, project):
        super().__init__(data, project=project)
        self.fields["family"].queryset = InstructionFamily.objects.filter(project=project).order_by("name")


class ImageFilter(_Filter):
    license = forms.ChoiceField(required=False, label=_("License"))
    category = forms.ChoiceField(required=False, label=_("Category"))

    def __init__(self, data, *, project):
        super().__init__(data, project=project)
        self.fields["license"].choices = _choices(reads.image_licenses(project=project), _("every license"))
        self.fields["category"].choices = _choices(reads.image_categories(project=project), _("every category"))


class ReviewSetFilter(_Filter):
    language = forms.ChoiceField(required=False, choices=[("", _("every language"))] + Language.choices,
                                 label=_("Language"))
    category = forms.ChoiceField(required=False, label=_("Category"))

    def __init__(self, data, *, project):
        super().__init__(data, project=project)
        self.fields["category"].choices = _choices(reads.review_set_categories(project=project),
                                                   _("every category"))


class OutputFilter(_Filter):
    model = forms.ChoiceField(required=False, label=_("Model"))

    def __init__(self, data, *, project):
        super().__init__(data, project=project)
        self.fields["model"].choices = _choices(reads.output_models(project=project), _("every model"))


# --- edits -----------------------------------------------------------------------------------------


def _text(label, *, rows=None):
    widget = forms.Textarea(attrs={"rows": rows}) if rows else forms.TextInput
    return forms.CharField(required=False, strip=False, label=label, widget=widget)


class FamilyEdit(forms.Form):
    name = _text(_("Name"))
    description = _text(_("Description"), rows=3)
    seed_instruction = _text(_("Seed instruction"), rows=3)
    seed_response = _text(_("Seed response"), rows=4)


class InstanceEdit(forms.Form):
    instruction = _text(_("Instruction"), rows=4)


class ImageEdit(forms.Form):
    license = _text(_("License"))
    creator = _text(_("Creator"))
    source_url = _text(_("Source URL"))
    category = _text(_("Category"))


class ReviewSetEdit(forms.Form):
    category = _text(_("Category"))


class OutputEdit(forms.Form):
    text = _text(_("Text"), rows=6)


# --- the kinds of rows -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    key: str
    label: str
    singular: str
    rows: Callable  # (project, **filters) -> queryset
    filter_form: type[_Filter]
    edit_form: type[forms.Form]
    edit: Callable  # the owning app's service: (row, **fields) -> row

    def of_project(self, project):
        return self.rows(project=project)


KINDS = {
    "families": Kind("families", _("Families"), _("family"), reads.browse_families, FamilyFilter, FamilyEdit,
                     curation.edit_family),
    "instances": Kind("instances", _("Instances"), _("instance"), reads.browse_instances, InstanceFilter,
                      InstanceEdit, curation.edit_instance),
    "images": Kind("images", _("Images"), _("image"), reads.browse_images, ImageFilter, ImageEdit,
                   curation.edit_image),
    "review-sets": Kind("review-sets", _("IRR review sets"), _("review set"), reads.browse_review_sets,
                        ReviewSetFilter, ReviewSetEdit, curation.edit_review_set),
    "outputs": Kind("outputs", _("Model outputs"), _("model output"), reads.browse_model_outputs, OutputFilter,
                    OutputEdit, curation.edit_model_output),
}


def _kind(key: str) -> Kind:
    if key not in KINDS:
        raise BadQuery(f"There is no list of {key[:40]!r}; the browser shows {', '.join(KINDS)}.")
    return KINDS[key]


def _row(kind: Kind, project, row_id: int):
    """The row if it is the project's; another project's (or a missing) id is a 404, as everywhere."""
    return get_object_or_404(kind.of_project(project), pk=row_id)


# --- pages -----------------------------------------------------------------------------------------


@researcher_required
@require_GET
def data_index(request, slug: str):
    return redirect("cockpit:data", slug=slug, kind="families")


@researcher_required
@require_GET
def data_list(request, slug: str, kind: str):
    project = project_for(request, slug)
    kind = _kind(kind)
    form = kind.filter_form(request.GET, project=project)
    query = request.GET.copy()
    query.pop("page", None)
    context = {"project": project, "cockpit_section": "data", "kinds": KINDS, "kind": kind, "form": form,
               "query": query.urlencode()}
    if not form.is_valid():
        # The list page itself, the refused value kept and its error at its field; no rows are read.
        return render(request, "cockpit/data/list.html", context, status=400)
    filters = form.filters()
    target = None
    if kind.key == "families":
        target = filters.pop("target", None) or DEFAULT_COVERAGE_TARGET
    page = Paginator(kind.rows(project=project, **filters), PER_PAGE).get_page(request.GET.get("page"))
    rows = list(page.object_list)
    for row in rows if target else ():
        row.missing = max(target - row.verified_count, 0)
    return render(request, "cockpit/data/list.html", {
        **context, "page": page, "rows": rows, "target": target,
        # A search or filter narrows the list: an empty page then means nothing matched, not no data.
        "filtering": any(value not in (None, "") for value in filters.values()),
        "page_ids": ", ".join(str(row.pk) for row in page.object_list),
    })


# An instance's ``updated_at`` a little after its ``created_at`` is the same save, not a change.
SAME_SAVE = timedelta(seconds=1)


def _detail_context(request, project, kind: Kind, row, *, form=None) -> dict:
    holders = curation.image_holders(row) if isinstance(row, Image) else None
    reasons = curation.usage(row, holders=holders)
    history = item_history(row, project=project) if kind.key != "images" else []
    for entry in history:
        for judgment in entry["judgments"]:
            judgment["worker"] = worker_label(judgment["assignment"].worker)
    context = {
        "project": project, "cockpit_section": "data", "kinds": KINDS, "kind": kind, "row": row,
        "can_manage": is_owner(request, project), "used_because": reasons, "history": history,
        "template": f"cockpit/data/_{kind.key}.html",
        "changed_at": _changed_at(row),
    }
    if context["can_manage"] and not reasons:
        context["edit_form"] = form or kind.edit_form(initial={name: getattr(row, name) for name in kind.edit_form.base_fields})
    if isinstance(row, Instance):
        context["verdicts"] = [
            {"verdict": verdict, "worker": _user_worker(verdict.worker)} for verdict in reads.verdicts_of_instance(row)]
        context["images"] = row.ordered_images()
    if isinstance(row, InstructionFamily):
        context["images"] = row.ordered_seed_images()
    if isinstance(row, ReviewSet):
        context["images"] = [row.image]
    if isinstance(row, Image):
        context["holders"] = reads.holders_of_image(row)
        context["image_use"] = _image_use(holders)
    return context


def _changed_at(row):
    """When the row last changed after it was added, or None. Only instances keep it (``updated_at``,
    which an edit and a move to another stage both set); the other rows keep no such date."""
    updated = getattr(row, "updated_at", None)
    return updated if updated is not None and updated - row.created_at > SAME_SAVE else None


def _holders_text(counts) -> str:
    """ "2 instances, 1 family and 2 review sets", in the page's language."""
    names = {Instance: lambda n: ngettext("%(n)d instance", "%(n)d instances", n),
             InstructionFamily: lambda n: ngettext("%(n)d family", "%(n)d families", n),
             ReviewSet: lambda n: ngettext("%(n)d review set", "%(n)d review sets", n)}
    parts = [names[model](count) % {"n": count} for model, count in counts if count]
    if len(parts) < 2:
        return "".join(parts)
    return _("%(first)s and %(last)s") % {"first": ", ".join(parts[:-1]), "last": parts[-1]}


def _image_use(holders) -> dict:
    """An image's history: no round uses an image itself, only the rows that show it."""
    used = sum(entry.used for entry in holders)
    return {"shown": _holders_text([(entry.model, entry.shown) for entry in holders]), "used_count": used,
            "shown_count": sum(entry.shown for entry in holders),
            "used": _holders_text([(entry.model, entry.used) for entry in holders])}


def _user_worker(user) -> str:
    """A verifier as researchers see workers (their label); "—" for an imported verdict."""
    if user is None:
        return "—"
    worker = getattr(user, "crowd_worker", None)
    return worker_label(worker) if worker is not None else user.get_username()


@researcher_required
@require_GET
def data_detail(request, slug: str, kind: str, row_id: int):
    project = project_for(request, slug)
    kind = _kind(kind)
    row = _row(kind, project, row_id)
    return render(request, "cockpit/data/detail.html", _detail_context(request, project, kind, row))


@researcher_required
@require_POST
def data_edit(request, slug: str, kind: str, row_id: int):
    project = owned_project_for(request, slug)
    kind = _kind(kind)
    row = _row(kind, project, row_id)
    form = kind.edit_form(request.POST)
    if form.is_valid():
        try:
            kind.edit(row, **form.cleaned_data)  # a used row is refused (409) before the fields are read
        except curation.InvalidEdit as error:
            form.add_error(error.field, error.message)
    if form.errors:
        context = _detail_context(request, project, kind, row, form=form)
        return render(request, "cockpit/data/detail.html", context, status=400)
    messages.success(request, f"{str(kind.singular).capitalize()} {row.pk} saved.")
    return redirect("cockpit:data-row", slug=project.slug, kind=kind.key, row_id=row.pk)


@researcher_required
@require_POST
def data_delete(request, slug: str, kind: str, row_id: int):
    project = owned_project_for(request, slug)
    kind = _kind(kind)
    row = _row(kind, project, row_id)
    curation.delete_row(row)
    messages.success(request, f"{str(kind.singular).capitalize()} {row_id} deleted.")
    return redirect(reverse("cockpit:data", kwargs={"slug": project.slug, "kind": kind.key}))


urlpatterns = [
    path("<slug:slug>/data/", data_index, name="data-index"),
    path("<slug:slug>/data/<str:kind>/", data_list, name="data"),
    path("<slug:slug>/data/<str:kind>/<int:row_id>/", data_detail, name="data-row"),
    path("<slug:slug>/data/<str:kind>/<int:row_id>/edit/", data_edit, name="data-edit"),
    path("<slug:slug>/data/<str:kind>/<int:row_id>/delete/", data_delete, name="data-delete"),
]
