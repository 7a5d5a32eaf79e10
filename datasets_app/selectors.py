"""Reads over the benchmark data, and its rows that a user may see (the projects they belong to)."""
from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from projects.selectors import projects_for_user

from .models import Image, Instance, InstructionFamily, ModelOutput, Review, ReviewSet, Verification

YIELD_SPLITS = {
    "single_image": Q(candidate__instance__family__is_multi_image=False),
    "multi_image": Q(candidate__instance__family__is_multi_image=True),
    "all": Q(),
}


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def yield_report(*, source: str | None = None, project=None) -> dict:
    """Pipeline yield per split (paper Table 2): of the verified reference candidates, the share
    kept (correct), discarded for a caption problem and discarded for a response problem.

    Counts final verdicts (imported aggregates and aggregated crowd verifications), one per
    candidate. A verdict with no outcome counts as a candidate in none of the three shares.
    ``source`` keeps only instances of one origin (e.g. "imported", or "crowd" for data
    collected on the platform). ``project`` keeps only that project's instances.
    """
    splits = {}
    for name, condition in YIELD_SPLITS.items():
        verdicts = Verification.objects.filter(condition, is_aggregate=True)
        if source is not None:
            verdicts = verdicts.filter(candidate__instance__source=source)
        if project is not None:
            verdicts = verdicts.filter(candidate__instance__family__project=project)
        counts = verdicts.aggregate(
            candidates=Count("id"),
            # A correct answer that the majority flagged harmful is discarded, so it is not kept.
            correct=Count("id", filter=Q(outcome=Verification.Outcome.CORRECT, harmful=False)),
            caption=Count("id", filter=Q(outcome=Verification.Outcome.CAPTION_PROBLEM)),
            response=Count("id", filter=Q(outcome=Verification.Outcome.RESPONSE_PROBLEM)),
            harmful=Count("id", filter=Q(harmful=True)),
        )
        total = counts["candidates"]
        splits[name] = {
            "candidates": total,
            "kept_pct": _percent(counts["correct"], total),
            "caption_problem_pct": _percent(counts["caption"], total),
            "response_problem_pct": _percent(counts["response"], total),
            "harmful_pct": _percent(counts["harmful"], total),
        }
    return {"splits": splits}


def families_for_user(user):
    return InstructionFamily.objects.filter(project__in=projects_for_user(user))


def instances_for_user(user):
    return Instance.objects.filter(family__project__in=projects_for_user(user))


def model_outputs_for_user(user):
    return ModelOutput.objects.filter(instance__family__project__in=projects_for_user(user))


def review_sets_for_user(user):
    return ReviewSet.objects.filter(project__in=projects_for_user(user))


def images_of_projects(projects) -> QuerySet[Image]:
    """Images of ``projects`` (each image belongs to one project, like the instances, seed examples
    and review sets that show it)."""
    return Image.objects.filter(project__in=projects)


def images_for_user(user) -> QuerySet[Image]:
    return images_of_projects(projects_for_user(user))


# --- the data browser: one project's rows, searched and filtered ---------------------------------


def browse_families(*, project, q: str = ""):
    """The project's families with their instances and verified instances (coverage against a target)."""
    families = InstructionFamily.objects.filter(project=project)
    if q:
        families = families.filter(Q(name__icontains=q) | Q(description__icontains=q))
    # One join (the family's instances): the counts need no DISTINCT.
    return families.annotate(
        instance_count=Count("instances"),
        verified_count=Count("instances", filter=Q(instances__status=Instance.Status.VERIFIED)),
    ).order_by("name", "pk")


def browse_instances(*, project, q: str = "", stage: str = "", family=None):
    """The project's instances, by stage (an instance status) and family; ``q`` searches the instruction."""
    instances = Instance.objects.filter(family__project=project)
    if stage:
        instances = instances.filter(status=stage)
    if family is not None:
        instances = instances.filter(family=family)
    if q:
        instances = instances.filter(instruction__icontains=q)
    return instances.select_related("family").order_by("pk")


def browse_images(*, project, q: str = "", license: str = "", category: str = ""):
    """The project's images with their licenses; ``q`` searches the address, creator and source."""
    images = images_of_projects([project])
    if license:
        images = images.filter(license=license)
    if category:
        images = images.filter(category=category)
    if q:
        images = images.filter(Q(url__icontains=q) | Q(file__icontains=q) | Q(creator__icontains=q)
                               | Q(source_url__icontains=q))
    return images.order_by("pk")


def browse_review_sets(*, project, q: str = "", language: str = "", category: str = ""):
    """The project's IRR review sets; ``q`` searches the external id and the review texts."""
    review_sets = ReviewSet.objects.filter(project=project)
    if language:
        review_sets = review_sets.filter(language=language)
    if category:
        review_sets = review_sets.filter(category=category)
    if q:
        review_sets = review_sets.filter(
            Q(external_id__icontains=q) | Q(pk__in=Review.objects.filter(text__icontains=q).values("review_set_id")))
    return review_sets.select_related("image").order_by("pk")


def browse_model_outputs(*, project, q: str = "", model: str = ""):
    """The project's model outputs; ``q`` searches the output text and the instruction."""
    outputs = ModelOutput.objects.filter(instance__family__project=project)
    if model:
        outputs = outputs.filter(model_name=model)
    if q:
        outputs = outputs.filter(Q(text__icontains=q) | Q(instance__instruction__icontains=q))
    return outputs.select_related("instance").order_by("pk")


def _distinct(queryset, field: str) -> list[str]:
    return list(queryset.exclude(**{field: ""}).order_by(field).values_list(field, flat=True).distinct())


def image_licenses(*, project) -> list[str]:
    """The licenses the project's images carry (the images list's filter values)."""
    return _distinct(images_of_projects([project]), "license")


def image_categories(*, project) -> list[str]:
    return _distinct(images_of_projects([project]), "category")


def review_set_categories(*, project) -> list[str]:
    return _distinct(ReviewSet.objects.filter(project=project), "category")


def output_models(*, project) -> list[str]:
    """The models with outputs on the project's instances."""
    return _distinct(ModelOutput.objects.filter(instance__family__project=project), "model_name")


def verdicts_of_instance(instance) -> list[Verification]:
    """Every verification of the instance's reference candidates, oldest first, with the candidate."""
    return list(Verification.objects.filter(candidate__instance=instance)
                .select_related("candidate", "worker").order_by("created_at", "pk"))


def holders_of_image(image, *, limit: int = 50) -> dict:
    """What shows the image: instances, families (as a seed image) and review sets, the first ``limit`` of each."""
    return {
        "instances": list(Instance.objects.filter(image_links__image=image).order_by("pk")[:limit]),
        "families": list(InstructionFamily.objects.filter(seed_image_links__image=image).order_by("pk")[:limit]),
        "review_sets": list(ReviewSet.objects.filter(image=image).order_by("pk")[:limit]),
    }
