"""Credentials in URLs: found and hidden the same way everywhere (storage and tracking URIs).

SQLAlchemy's URL parser reads a password that contains '/', which a generic URL parser does
not, and it also reads `?password=` query parameters; it parses http(s) URLs too. It is
imported on first use: the spec reads URLs, and `sweeper train` (which loads the spec's module)
starts on a GPU image without SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

HIDDEN = "***"


def _parse(url: str) -> URL | None:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url)
    except (ArgumentError, ValueError):
        return None


def has_password(url: str) -> bool:
    parsed = _parse(url)
    return parsed is not None and (parsed.password is not None or "password" in parsed.query)


def redact(url: str) -> str:
    """The URL with every password hidden, for messages, logs and stored records."""
    parsed = _parse(url)
    if parsed is None:
        return url if "@" not in url else "<unparseable URL>"
    if "password" in parsed.query:
        parsed = parsed.update_query_dict({"password": HIDDEN})
    return parsed.render_as_string(hide_password=True).replace("%2A%2A%2A", HIDDEN)


def scrub(text: str, url: str) -> str:
    """`text` (an exception message, say) with `url`'s password hidden wherever it appears."""
    parsed = _parse(url)
    if parsed is None:
        return text
    text = text.replace(url, redact(url))
    for secret in (parsed.password, parsed.query.get("password")):
        for value in secret if isinstance(secret, tuple) else (secret,):
            if value and len(str(value)) >= 4:  # a shorter one would hide ordinary words, not a secret
                text = text.replace(str(value), HIDDEN)
    return text
