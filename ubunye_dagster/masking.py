"""Secrets kept out of records: secret-looking run tags and credentials inside error text.

A record is shown in the Dagster UI, printed by the CLI and kept for years, so anything that looks
like a password, token or key is replaced by ``***`` before it is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "***"

#: Tag or variable names whose values are secrets whatever they look like.
_SECRET_NAME = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|"
    r"auth|session[_-]?key|signature|pwd|dsn|connection[_-]?string)",
    re.IGNORECASE,
)

#: ``user:password@`` inside a URL.
_URL_PASSWORD = re.compile(
    r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)(?P<secret>[^@\s/]+)(?=@)"
)
#: ``password=...``, ``token: ...`` and the like inside free text (query strings, JDBC, logs).
_ASSIGNED_SECRET = re.compile(
    r"(?P<head>\b[\w.-]*(?:pass(?:word|wd)?|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|credential|pwd|signature)[\w.-]*\s*[=:]\s*)(?P<q>['\"]?)(?P<secret>[^\s'\";&,)]+)",
    re.IGNORECASE,
)
#: ``Bearer <token>`` / ``Basic <credentials>`` authorisation values.
_AUTH_HEADER = re.compile(r"(?P<head>\b(?:Bearer|Basic)\s+)(?P<secret>[A-Za-z0-9._~+/=-]{8,})")
#: Values that are secrets by their shape: AWS access key ids, GitHub and Slack tokens, JWTs.
_SECRET_SHAPES = re.compile(
    r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bxox[abposr]-[A-Za-z0-9-]{10,}\b|"
    r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"
)


def is_secret_name(name: str) -> bool:
    """True when a tag or variable called ``name`` holds a secret (password, token, key, ...)."""
    return bool(_SECRET_NAME.search(name))


def mask_text(text: str) -> str:
    """``text`` with every credential it visibly carries replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    text = _ASSIGNED_SECRET.sub(lambda m: m.group("head") + m.group("q") + MASK, text)
    text = _AUTH_HEADER.sub(lambda m: m.group("head") + MASK, text)
    return _SECRET_SHAPES.sub(MASK, text)


def mask_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """Run tags to record: a secret-named tag's value is ``***``; others have secrets cut out."""
    return {
        str(name): (MASK if is_secret_name(str(name)) else mask_text(str(value)))
        for name, value in tags.items()
    }


def mask_error(error: BaseException) -> str:
    """``"<Type>: <message>"`` of an exception, credentials masked."""
    return mask_text(f"{type(error).__name__}: {error}")
