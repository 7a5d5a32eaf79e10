"""The one license vocabulary of images: what uploads offer, imports accept and releases publish.

Every license is stored under its SPDX identifier (``CC-BY-4.0``), with one exception: SPDX has no
identifier for Creative Commons' Public Domain Mark, so it is stored as ``PDM-1.0``, the short name
Creative Commons gives it (SPDX's ``CC-PDDC`` is a different, retired instrument). Text typed by
people is normalised on input (``normalise_license``): case, spaces, hyphens and underscores do not
matter ("CC BY 4.0", "cc-by-4.0", "CC-BY 4.0" are ``CC-BY-4.0``), a trailing "International",
"Universal", "Unported" or "Generic" is dropped, and a few common names are known ("CC0",
"Public Domain Mark", "public domain"). Anything else is refused, naming the accepted identifiers.
An empty value means "no license recorded" and is kept empty.

A release publishes an image only when its license is ``publishable`` (public domain, CC0, CC BY,
CC BY-SA, MIT, Apache-2.0); NC and ND licenses are known, so they can be recorded, but keep an
image out of releases. No Django import: file readers, task types and releases all use it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kernel.errors import ServiceError


@dataclass(frozen=True)
class License:
    id: str
    name: str
    publishable: bool


_CC_VERSIONS = ("4.0", "3.0", "2.5", "2.0", "1.0")
_CC_KINDS = {
    "BY": ("Attribution", True),
    "BY-SA": ("Attribution Share Alike", True),
    "BY-NC": ("Attribution Non Commercial", False),
    "BY-ND": ("Attribution No Derivatives", False),
    "BY-NC-SA": ("Attribution Non Commercial Share Alike", False),
    "BY-NC-ND": ("Attribution Non Commercial No Derivatives", False),
}



def _cc(kind: str, version: str) -> License:
    name, publishable = _CC_KINDS[kind]
    return License(f"CC-{kind}-{version}", f"Creative Commons {name} {version}", publishable)


# Most used first: the worker upload page offers the publishable ones in this order.
LICENSES: tuple[License, ...] = (
    License("CC0-1.0", "Creative Commons Zero v1.0 Universal", True),
    License("PDM-1.0", "Public Domain Mark 1.0", True),
    *(_cc(kind, version) for version in _CC_VERSIONS for kind in ("BY", "BY-SA")),
    License("MIT", "MIT License", True),
    License("Apache-2.0", "Apache License 2.0", True),
    *(_cc(kind, version) for kind in ("BY-NC", "BY-ND", "BY-NC-SA", "BY-NC-ND") for version in _CC_VERSIONS),
)
BY_ID: dict[str, License] = {license.id: license for license in LICENSES}

# Spellings (as normalised keys, see _key) that are not an identifier written another way.
_ALIASES = {
    "cc0": "CC0-1.0",
    "cc-zero": "CC0-1.0",
    "creative-commons-zero": "CC0-1.0",
    "pdm": "PDM-1.0",
    "public-domain-mark": "PDM-1.0",
    "public-domain-mark-1.0": "PDM-1.0",
    "public-domain": "PDM-1.0",
    "mit-license": "MIT",
    "apache-license-2.0": "Apache-2.0",
}
_SUFFIX = re.compile(r"-(international|universal|unported|generic)$")


def _key(text: str) -> str:
    return _SUFFIX.sub("", re.sub(r"[\s_\-]+", "-", text.strip().lower()).strip("-"))


_BY_KEY: dict[str, str] = {**{_key(license.id): license.id for license in LICENSES}, **_ALIASES}


class UnknownLicense(ServiceError):
    """The license is not one of the accepted identifiers."""

    def __init__(self, value: str):
        self.value = value
        super().__init__(f"unknown license {value[:100]!r}; use one of: {', '.join(accepted_ids())}")


def accepted_ids() -> list[str]:
    return [license.id for license in LICENSES]


def publishable_ids() -> list[str]:
    """The licenses a release publishes (and the worker upload page offers), most used first."""
    return [license.id for license in LICENSES if license.publishable]


def lookup(text: str | None) -> str | None:
    """The identifier ``text`` spells, "" for no license, None when it spells none we know."""
    text = (text or "").strip()
    if not text:
        return ""
    return _BY_KEY.get(_key(text))


def normalise_license(text: str | None) -> str:
    """The identifier of the license ``text`` spells ("" for an empty value); ``UnknownLicense``
    (naming the accepted identifiers) for anything else."""
    found = lookup(text)
    if found is None:
        raise UnknownLicense((text or "").strip())
    return found


def is_publishable(value: str | None) -> bool:
    """Whether a release may publish an image stored with this license value."""
    found = lookup(value)
    return bool(found) and BY_ID[found].publishable


def exclusion(value: str | None) -> tuple[str, str] | None:
    """Why an image with this stored license stays out of a release, as (reason, detail), or None
    when it may be published: ``no_license``, ``license_not_publishable`` (detail: the identifier)
    or ``license_unknown`` (detail: the value as stored, which no spelling of ours matches)."""
    found = lookup(value)
    if found == "":
        return "no_license", ""
    if found is None:
        return "license_unknown", (value or "").strip()
    if not BY_ID[found].publishable:
        return "license_not_publishable", found
    return None
