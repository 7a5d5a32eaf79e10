"""The names the admin shows for crowdbench's models read as English: plurals of words ending in a
consonant and "y", uncountable nouns, and acronyms in capitals."""
import re

from django.apps import apps

ACRONYMS = {"llm", "irr", "api", "url", "json", "csv"}


def crowdbench_models():
    return [model for model in apps.get_models() if not model.__module__.startswith(("django.", "rest_framework", "knox"))]


def test_model_names_read_as_english():
    wrong = []
    for model in crowdbench_models():
        singular, plural = str(model._meta.verbose_name), str(model._meta.verbose_name_plural)
        if re.search(r"[^aeiou]ys$", plural):
            wrong.append(f"{model._meta.label}: {plural}")
        if ACRONYMS & set(f"{singular} {plural}".split()):
            wrong.append(f"{model._meta.label}: {singular} / {plural}")
    assert len(crowdbench_models()) > 20
    assert not wrong, wrong
