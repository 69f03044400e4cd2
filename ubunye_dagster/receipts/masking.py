"""Secrets kept out of records: secret-looking run tags, config values and credentials in text.

A record is shown in the Dagster UI, printed by the CLI and kept for years, so anything that looks
like a password, token or key is replaced by ``***`` before it is written. Only the secret itself
is replaced: the rest of a message is kept as it was.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

#: Name parts that make a value secret wherever they appear in a name (``PGPASSWORD``).
_SECRET_FRAGMENTS = (
    "password",
    "passwd",
    "secret",
    "token",
    "credential",
    "passphrase",
    "apikey",
    "accesskey",
    "privatekey",
    "connectionstring",
)
#: Words that make a value secret when they are a whole word of the name (``db_pass``).
_SECRET_WORDS = frozenset(
    {"pass", "pwd", "auth", "authorization", "private", "key", "keys", "dsn", "signature", "creds"}
)
#: A ``key`` that names a thing rather than a secret: ``partition_key``, ``run_key``, ...
_NAMING_KEYS = frozenset(
    {
        "partition",
        "run",
        "asset",
        "check",
        "sort",
        "primary",
        "foreign",
        "join",
        "group",
        "cache",
        "idempotency",
        "dedup",
        "object",
        "row",
        "column",
        "lookup",
        "index",
        "hash",
        "map",
        "step",
        "job",
        "event",
        "record",
        "table",
        "output",
        "input",
        "natural",
        "surrogate",
        "unique",
        "business",
        "s3",
    }
)
_WORD_BOUNDARY = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

#: ``user:password@`` inside a URL (the password may hold ``/``, as AWS secret keys do).
_URL_PASSWORD = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)(?P<secret>[^@\s]+)(?=@)"
)
#: An ``Authorization`` header: its scheme (Bearer, Basic, ...) is kept, its credentials are not.
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:proxy-)?authorization\b['\"]?\s*[:=]\s*['\"]?(?:(?:Bearer|Basic|Token|Digest)\s+)?)"
    r"(?P<secret>[^\s'\",}]+)",
    re.IGNORECASE,
)
#: ``Bearer <token>`` / ``Basic <credentials>`` anywhere else.
_AUTH_SCHEME = re.compile(r"(?P<head>\b(?:Bearer|Basic)\s+)(?P<secret>[A-Za-z0-9._~+/=-]{8,})")
#: ``"name": "value"`` (JSON) and ``'name': 'value'`` (Python repr); the value may be unquoted.
_QUOTED_PAIR = re.compile(
    r"(?P<nq>[\"'])(?P<name>[^\"'\n]{1,100})(?P=nq)(?P<sep>\s*:\s*)"
    # A bare value never opens a mapping or list: those are masked whole, or read pair by pair.
    r"(?:(?P<vq>[\"'])(?P<quoted>(?:\\.|(?!(?P=vq))[^\\\n])*)(?P=vq)|(?P<bare>[^\s,}\]{\[][^\s,}\]]*))"
)
#: A name (quoted, or a bare word) and its separator, followed by a mapping or a list.
_NESTED_VALUE = re.compile(
    r"(?:(?P<nq>[\"'])(?P<quoted>[^\"'\n]{1,100})(?P=nq)|(?<![\w.-])(?P<bare>[\w.-]{1,100}))"
    r"\s*[:=]\s*(?=[{\[(])"
)
_CLOSING = {"{": "}", "[": "]", "(": ")"}
#: Where a secret-looking name can start: only such names are looked at, so a pair of ordinary
#: words never swallows the name that follows them.
_NAME_HINT = (
    r"[\w.-]*?(?:pass|pwd|secret|token|credential|creds|key|auth|private|dsn|signature)[\w.-]*"
)
_VALUE = (
    r"(?:(?P<vq>[\"'])(?P<quoted>(?:\\.|(?!(?P=vq))[^\\\n])*)(?P=vq)"
    r"|(?P<bare>[^\s'\";&,)}\]]+))"
)
#: ``name=value`` and ``name: value`` in free text (query strings, JDBC URLs, logs, reprs).
_ASSIGNED = re.compile(
    rf"(?<![\w.-])(?P<name>{_NAME_HINT})(?P<sep>\s*[=:]\s*)" + _VALUE, re.IGNORECASE
)
#: ``PGPASSWORD value`` (an environment variable) and ``--password value`` (a command line flag).
_SPACED = re.compile(
    rf"(?<![\w.-])(?P<name>--{_NAME_HINT}|(?-i:[A-Z0-9_]*"
    r"(?:PASS|PWD|SECRET|TOKEN|CREDENTIAL|KEY|AUTH|PRIVATE|DSN|SIGNATURE)[A-Z0-9_]*))"
    # A word of prose after the name is not a value (``PGPASSWORD is not set``).
    r"(?P<sep>[ \t]+)(?!(?:is|was|not|must|should|missing|unset|set|required|and|or)\b)" + _VALUE,
    re.IGNORECASE,
)
#: Exception type names are not settings (``KeyError: 'password'`` keeps the missing key).
_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Warning)$")
#: Values that are secrets by their shape: AWS access key ids and secret keys, GitHub and Slack
#: tokens, JWTs. A secret key is 40 characters of mixed case (a hex digest never is).
_SECRET_SHAPES = re.compile(
    r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"
    r"|(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
    r"(?=[A-Za-z0-9/+]{0,39}[0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bxox[abposr]-[A-Za-z0-9-]{10,}\b"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b"
)


def is_secret_name(name: str) -> bool:
    """True when a tag, config field or variable called ``name`` holds a secret (password,
    secret, token, api_key, key, credential, private, passphrase; any case, any separator)."""
    words = [word.lower() for word in _WORD_BOUNDARY.split(str(name)) if word]
    joined = "".join(words)
    if any(fragment in joined for fragment in _SECRET_FRAGMENTS):
        return True
    for index, word in enumerate(words):
        if word in ("key", "keys") and index > 0 and words[index - 1] in _NAMING_KEYS:
            continue
        if word in _SECRET_WORDS:
            return True
    return False


def mask_text(text: str) -> str:
    """``text`` with every credential it visibly carries replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    text = _AUTH_HEADER.sub(lambda m: m.group("head") + MASK, text)
    text = _AUTH_SCHEME.sub(lambda m: m.group("head") + MASK, text)
    text = _masked_nested_values(text)
    text = _QUOTED_PAIR.sub(_masked_pair, text)
    text = _ASSIGNED.sub(_masked_assignment, text)
    text = _SPACED.sub(_masked_assignment, text)
    return _SECRET_SHAPES.sub(MASK, text)


def mask_values(value: Any, name: str = "") -> Any:
    """A config value or tag value to record: under a secret-looking name (at any depth) the
    value is ``***``; text elsewhere has its visible credentials masked."""
    if name and is_secret_name(name) and value not in (None, ""):
        return MASK
    if isinstance(value, Mapping):
        return {key: mask_values(item, str(key)) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_values(item) for item in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def mask_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """Run tags to record: a secret-named tag's value is ``***``; others have secrets cut out."""
    return {str(name): str(mask_values(str(value), str(name))) for name, value in tags.items()}


def mask_error(error: BaseException) -> str:
    """``"<Type>: <message>"`` of an exception, credentials masked."""
    return mask_text(f"{type(error).__name__}: {error}")


def _already_masked(match: re.Match[str]) -> bool:
    """The value is ``***`` or holds it (``Bearer ***``), or is the scheme word before it."""
    value = match.group("quoted") if match.group("vq") else match.group("bare")
    return MASK in (value or "") or match.string.startswith(" " + MASK, match.end())


def _masked_pair(match: re.Match[str]) -> str:
    if not is_secret_name(match.group("name")) or _already_masked(match):
        return match.group(0)
    head = match.group("nq") + match.group("name") + match.group("nq") + match.group("sep")
    if match.group("vq"):
        return head + match.group("vq") + MASK + match.group("vq")
    if match.group("bare") in ("null", "None", "true", "false", "True", "False"):
        return match.group(0)
    return head + MASK


def _with_word_before(match: re.Match[str]) -> str:
    """The name, with the word before it when it is a bare ``key`` (``partition key: x``)."""
    name = match.group("name").lstrip("-")
    if name.lower() not in ("key", "keys"):
        return name
    before = match.string[: match.start()].split()
    return f"{before[-1]} {name}" if before else name


def _masked_assignment(match: re.Match[str]) -> str:
    name, sep = match.group("name"), match.group("sep")
    if (
        not is_secret_name(_with_word_before(match))
        or _EXCEPTION_NAME.search(name)
        or _already_masked(match)
    ):
        return match.group(0)
    if match.group("vq"):
        return name + sep + match.group("vq") + MASK + match.group("vq")
    return name + sep + MASK


def _masked_nested_values(text: str) -> str:
    """``text`` with the whole mapping or list under each secret-looking name replaced by
    ``***``, its brackets and all, so what follows it is kept as written."""
    kept: list[str] = []
    position = 0
    for match in _NESTED_VALUE.finditer(text):
        if match.start() < position:
            continue  # inside a value already masked
        name = match.group("quoted") or match.group("bare")
        if not is_secret_name(name) or _EXCEPTION_NAME.search(name):
            continue
        kept += [text[position : match.end()], MASK]
        position = _closing_bracket_end(text, match.end())
    return "".join(kept) + text[position:]


def _closing_bracket_end(text: str, start: int) -> int:
    """Where the bracketed value opening at ``start`` ends (past its closing bracket); brackets
    inside quoted strings do not count. A value cut off before it closes runs to the end."""
    expected: list[str] = []
    quote = ""
    index = start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in _CLOSING:
            expected.append(_CLOSING[char])
        elif char in ")]}" and expected and char == expected[-1]:
            expected.pop()
            if not expected:
                return index + 1
        index += 1
    return len(text)
