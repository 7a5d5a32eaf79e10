"""The one rule for image URLs that come from outside: worker submissions and imported files.

Workers' browsers load these URLs and the LLM steps hand them to a model server, so a URL that
points inside our network (the database port, the cache, a cloud metadata service) would make
those fetch it. The rule:

- ``http`` or ``https`` only, with a host name, no user name or password, a valid port, and no
  control characters (spaces are allowed: published VisIT-Bench URLs contain them);
- nothing a browser reads differently from urllib: no backslash anywhere (browsers read it as ``/``,
  so ``http://127.0.0.1\\.example.com/`` goes to 127.0.0.1), and a host of letters, digits, ``-``,
  ``_`` and ``.`` only once international names are in their ASCII form (browsers decode ``%31``
  in a host, and map full-width digits and ideographic full stops to ASCII, as the check does);
- the host must not be a local name (``localhost``, ``*.localhost``, ``*.local``, ``*.internal``,
  ``metadata``) and must not resolve to a loopback, private, link-local, multicast, reserved,
  shared (carrier-grade NAT) or unspecified address, which covers cloud metadata endpoints such as
  169.254.169.254, 100.100.100.200 and fd00:ec2::254;
- a host that does not resolve is refused for worker submissions; for imported files it is
  accepted (a published file outlives some of its hosts, and imports may run offline), while a
  host that does resolve must pass like any other.

URLs are stored as given, so that rows of different published files match, and percent-encoded
(``encode_url``) wherever they are used: pages and LLM requests.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from typing import Callable, Iterable
from urllib.parse import quote, urlsplit

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from kernel.input_checks import text_problem

Resolver = Callable[[str, int], Iterable[str]]

# As long as Image.url can hold.
MAX_URL_LENGTH = 1000
# Names that always mean "this machine" or "this network", whatever DNS says.
LOCAL_NAMES = {"localhost", "metadata", "metadata.google.internal", "instance-data"}
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain", ".home.arpa")
# Characters left as they are when percent-encoding: URL syntax and existing %XX escapes.
URL_SAFE = ":/?#[]@!$&'()*+,;=%~"
# A host name in ASCII form (IP literals are read apart).
HOST_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class ImageURLRefused(ValueError):
    """An image URL that the rule refuses; the message says why."""


def resolve_host(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to (tests replace this function; they need no network)."""
    return [info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def encode_url(url: str) -> str:
    """``url`` with spaces and other characters that are not allowed in URLs percent-encoded.

    Existing escapes are kept, so encoding twice changes nothing.
    """
    return quote(url, safe=URL_SAFE)


def match_key(url: str) -> str:
    """What two spellings of one URL (``a b.jpg`` and ``a%20b.jpg``) have in common."""
    return encode_url(url.strip())


# The kinds of address no URL may point to, each with why (in the active language: workers read it).
BLOCKED_KINDS = {
    "loopback": gettext_noop("%(address)s is a loopback address"),
    "link_local": gettext_noop("%(address)s is a link-local address"),
    "multicast": gettext_noop("%(address)s is a multicast address"),
    "reserved": gettext_noop("%(address)s is a reserved address"),
    "unspecified": gettext_noop("%(address)s is an unspecified address"),
    "private": gettext_noop("%(address)s is a private address"),
}


def blocked_address(address: str) -> str | None:
    """Why connecting to ``address`` is not allowed, or None."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind, reason in BLOCKED_KINDS.items():
        if getattr(ip, f"is_{kind}"):
            return _(reason) % {"address": ip}
    if not ip.is_global:
        return _("%(address)s is not a public address") % {"address": ip}
    return None


def _literal_address(host: str) -> str | None:
    """The address when ``host`` is an IP literal, including the short and numeric IPv4 forms
    (``127.1``, ``2130706433``, ``0x7f.0.0.1``) that browsers and resolvers accept."""
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        pass
    if host and all(part and all(c in "0123456789abcdefx" for c in part) for part in host.lower().split(".")):
        try:
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return None
    return None


def check_image_url(url: str, *, allow_unresolvable: bool, resolver: Resolver | None = None) -> str:
    """``url`` (stripped) when the rule accepts it; ``ImageURLRefused`` saying why otherwise."""
    if not isinstance(url, str):
        raise ImageURLRefused(_("the image URL is not text"))
    url = url.strip()
    if not url:
        raise ImageURLRefused(_("the image URL is empty"))
    if len(url) > MAX_URL_LENGTH:
        raise ImageURLRefused(_("the image URL is longer than %(limit)d characters") % {"limit": MAX_URL_LENGTH})
    problem = text_problem(url, multiline=False)
    if problem:
        raise ImageURLRefused(f"the image URL {problem}")
    if "\\" in url:
        raise ImageURLRefused(_("the image URL contains a backslash, which browsers read as '/'"))
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ImageURLRefused(_("the image URL is malformed (%(error)s)") % {"error": exc}) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ImageURLRefused(_("not an http(s) URL: %(url)s") % {"url": repr(url[:80])})
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise ImageURLRefused(_("the image URL has no host: %(url)s") % {"url": repr(url[:80])})
    if parts.username is not None or parts.password is not None:
        raise ImageURLRefused(_("the image URL must not contain a user name or password"))
    if " " in host:
        raise ImageURLRefused(_("the host of the image URL contains a space: %(host)s") % {"host": repr(host[:80])})
    literal = _literal_address(host)
    if literal is None:
        # The ASCII form browsers use: full-width digits and letters, ideographic full stops mapped.
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ImageURLRefused(_("the host of the image URL is not a valid name: %(host)s")
                                  % {"host": repr(host[:80])}) from None
        if not HOST_NAME.fullmatch(host):
            raise ImageURLRefused(_("the host of the image URL contains characters a host name cannot have: "
                                    "%(host)s") % {"host": repr(host[:80])})
        literal = _literal_address(host)
    if host in LOCAL_NAMES or host.endswith(LOCAL_SUFFIXES):
        raise ImageURLRefused(_("the image URL points to a local host name (%(host)s)") % {"host": host})
    if literal is not None:
        addresses = [literal]
    else:
        lookup = resolver or resolve_host
        try:
            addresses = list(lookup(host, port or (443 if parts.scheme.lower() == "https" else 80)))
        except (OSError, UnicodeError):
            addresses = []
        if not addresses:
            if allow_unresolvable:
                return url
            raise ImageURLRefused(_("the host of the image URL (%(host)s) cannot be found") % {"host": host})
    for address in addresses:
        reason = blocked_address(address)
        if reason:
            raise ImageURLRefused(_("the image URL points to a non-public address (%(host)s: %(reason)s)")
                                  % {"host": host, "reason": reason})
    return url


class ImportURLChecker:
    """The rule for imported files: unresolvable hosts accepted, one lookup per host per import."""

    def __init__(self, resolver: Resolver | None = None):
        self.resolver = resolver
        self.verdicts: dict[tuple[str, int], list[str]] = {}

    def _cached_lookup(self, host: str, port: int) -> list[str]:
        if (host, port) not in self.verdicts:
            try:
                self.verdicts[host, port] = list((self.resolver or resolve_host)(host, port))
            except (OSError, UnicodeError):
                self.verdicts[host, port] = []
        return self.verdicts[host, port]

    def __call__(self, url: str) -> str:
        return check_image_url(url, allow_unresolvable=True, resolver=self._cached_lookup)


def validate_submitted_image_url(url: str, *, label: str) -> str:
    """The rule for worker submissions, as a form error naming the field (``label``)."""
    from django.core.exceptions import ValidationError

    try:
        return check_image_url(url, allow_unresolvable=False)
    except ImageURLRefused as refused:
        raise ValidationError(_("%(field)s is not a valid image URL: %(reason)s.")
                              % {"field": label, "reason": refused}) from None
