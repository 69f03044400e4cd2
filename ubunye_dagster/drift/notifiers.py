"""Ready ``on_drift`` hooks: each flagged verdict as JSON to a webhook, or its line to Slack.

Each raises when the message is not delivered (an HTTP status other than 2xx, no answer within
``timeout``, Slack refusing it); the drift sensor logs that on its tick and goes on.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

import dagster as dg

from ubunye_dagster.drift.hooks import DriftHook, DriftVerdict

#: Seconds a ready notifier waits for the server to answer.
DEFAULT_TIMEOUT_SECONDS = 10.0


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would follow one by turning the POST into a bodiless GET."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def webhook_notifier(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> DriftHook:
    """An ``on_drift`` hook POSTing each verdict as JSON (the fields of ``DriftVerdict``) to
    ``url``, with ``headers`` added (an ``Authorization``, say)."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise ValueError(f"webhook URL {url!r} must start with http:// or https://")
    if timeout <= 0:
        raise ValueError(f"webhook timeout must be positive seconds, not {timeout!r}")
    sent_headers = {
        "Content-Type": "application/json",
        "User-Agent": "ubunye-dagster drift sensor",
        **(headers or {}),
    }
    opener = urllib.request.build_opener(_NoRedirects)

    def post_verdict(verdict: DriftVerdict) -> None:
        body = verdict.model_dump_json().encode("utf-8")
        request = urllib.request.Request(url, data=body, headers=sent_headers, method="POST")
        # urllib raises HTTPError on a status of 300 or more, and a timeout error past `timeout`.
        with opener.open(request, timeout=timeout) as response:
            response.read()

    return post_verdict


def slack_notifier(
    channel: str,
    *,
    token: str,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> DriftHook:
    """An ``on_drift`` hook posting each verdict's line to a Slack channel through dagster-slack's
    ``SlackResource`` (``pip install 'ubunye-dagster[slack]'``). ``token`` may be a
    ``dg.EnvVar``, read when a message is sent; ``base_url`` replaces Slack's API address."""
    try:
        from dagster_slack import SlackResource
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "slack_notifier needs dagster-slack: pip install 'ubunye-dagster[slack]'"
        ) from error
    if timeout <= 0:
        raise ValueError(f"Slack timeout must be positive seconds, not {timeout!r}")

    def post_line(verdict: DriftVerdict) -> None:
        client = SlackResource(token=_token_value(token)).get_client()
        client.timeout = timeout  # slack_sdk hands it to urllib, which takes fractions too
        if base_url is not None:
            client.base_url = base_url if base_url.endswith("/") else base_url + "/"
        # slack_sdk raises SlackApiError when Slack answers "ok": false.
        client.chat_postMessage(channel=channel, text=f":warning: {verdict.summary}")

    return post_line


def _token_value(token: str) -> str:
    """The token itself; a ``dg.EnvVar`` read now, refused when its variable is unset."""
    if not isinstance(token, dg.EnvVar):
        return token
    value = token.get_value()
    if not value:
        raise ValueError(f"the Slack token's environment variable {token.env_var_name} is not set")
    return value
