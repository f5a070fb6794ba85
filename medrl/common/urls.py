"""URLs as medrl writes and logs them: without the secrets a user may put inside one.

A judge endpoint can carry credentials in its URL: a user name and password
(``http://user:pw@host/v1``) or a token in the query (``?token=...``, ``?api_key=...``,
``?sig=...``). :func:`redact_url` is the one place such a URL is made safe to show: the
password and user name become ``***`` and the value of every query parameter becomes ``***``
unless its name is known to be harmless (``api-version``); the fragment is dropped. Every place
that writes or logs a judge URL (a run's ``config.yaml``, an eval's ``config.json``,
``metrics.json`` and report, the judge's cache key and its error messages) goes through it, so
the redacted form is also what identifies the endpoint: two URLs that differ only in their
secrets are the same endpoint.

:func:`redact_urls_in` does the same to every URL inside a free text (an error message from an
HTTP library names the URL it failed on). :func:`origin` is a URL's scheme, host and port (what
decides whether a redirect leaves the server), :func:`query_params` the query as a dict (the
judge client sends it with every request instead of gluing it into the path), and
:func:`url_secrets` the secret values themselves (masked in any text that echoes them).
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

#: Query parameters whose values are shown as they are (everything else may be a secret).
PUBLIC_QUERY_KEYS = frozenset({"api-version", "api_version"})
MASK = "***"
_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"<>`]+")


def _split(url: str):
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return None
    return parts if parts.scheme and parts.netloc else None


def redact_url(url: str | None) -> str | None:
    """``url`` with its user name, password and non-public query values replaced by ``***``
    and no fragment; a URL without secrets comes back unchanged (None and non-URLs too)."""
    if not isinstance(url, str):
        return url
    parts = _split(url)
    if parts is None:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = "&".join(f"{quote(k, safe='-_.')}={v if k.lower() in PUBLIC_QUERY_KEYS else MASK}"
                         for k, v in pairs)
    if netloc == parts.netloc and query == parts.query and not parts.fragment:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_urls_in(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    if not isinstance(text, str) or "://" not in text:
        return text
    def one(m: re.Match) -> str:
        url = m.group(0)
        core = url.rstrip(".,;:!?)]}")  # sentence punctuation after a URL is not part of it
        return (redact_url(core) or "") + url[len(core):]

    return _URL_IN_TEXT.sub(one, text)


def url_secrets(url: str | None) -> list[str]:
    """The secret values inside ``url`` (password, user name, non-public query values) of 4
    characters or more, to mask wherever a text might echo them."""
    parts = _split(url) if isinstance(url, str) else None
    if parts is None:
        return []
    found = [s for s in (parts.password, parts.username) if s]
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in PUBLIC_QUERY_KEYS]
    return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def without_query(url: str) -> tuple[str, dict[str, str]]:
    """``(url without its query and fragment, the query as a dict)``."""
    parts = _split(url)
    if parts is None or not (parts.query or parts.fragment):
        return url, {}
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), dict(parse_qsl(parts.query,
                                                                                       keep_blank_values=True))


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port filled in for http (80) and https (443): a
    redirect whose target has another origin leaves the server the user named."""
    parts = urlsplit(str(url))
    scheme = parts.scheme.lower()
    port = parts.port if parts.port is not None else {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


class RedactURLFilter(logging.Filter):
    """A logging filter that passes every record with the URLs in its message redacted
    (:func:`redact_urls_in`): HTTP clients log each request's full URL at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot format is left to the handler
            return True
        safe = redact_urls_in(msg)
        if safe != msg:
            record.msg, record.args = safe, ()
        return True


def redact_logged_urls(*loggers: str) -> None:
    """Add one :class:`RedactURLFilter` to each named logger (idempotent)."""
    for name in loggers:
        lg = logging.getLogger(name)
        if not any(isinstance(f, RedactURLFilter) for f in lg.filters):
            lg.addFilter(RedactURLFilter())


__all__ = ["MASK", "PUBLIC_QUERY_KEYS", "RedactURLFilter", "origin", "redact_logged_urls", "redact_url",
           "redact_urls_in", "url_secrets", "without_query"]
