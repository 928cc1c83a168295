"""Sending a change set: to webhooks (``--notify URL``, an HTTP POST of the ``gpudiag.audit.changes/1`` JSON:
:mod:`.webhook`, one deadline for the whole request and only the status line read), to other services through
Apprise when that optional extra is installed (``mailto://``, ``slack://``, … URLs;
https://github.com/caronc/apprise), and to a command (``--notify-cmd CMD``: split like a shell would split it,
run without a shell, the JSON on its stdin).

A failure is data: :func:`send` returns one line per failed target and never raises, so a failed
notification never loses the run. Apprise is imported here and nowhere else.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpudiag.audit.webhook import WebhookError, post_status

NOTIFY_TIMEOUT_S = 10.0
WEBHOOK_SCHEMES = ("http://", "https://")


class NotifyConfigError(ValueError):
    """A notification target that cannot work (bad command line, a scheme without Apprise)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """Where to send: a URL or a command's argv."""

    url: str | None = None
    argv: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return _redact(self.url) if self.url else f"--notify-cmd {self.argv[0]}"


def _redact(url: str) -> str:
    """The URL without credentials or query (tokens live there): what error lines may show."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0].rsplit('@', 1)[-1]}"


def targets(urls: tuple[str, ...], command: str | None) -> tuple[Target, ...]:
    """The targets the flags name; :class:`NotifyConfigError` (one line) for one that cannot work."""
    out = []
    for url in urls:
        if "://" not in url:
            raise NotifyConfigError(f"--notify {url}: expected a URL (https://…, or an Apprise URL)")
        if not url.startswith(WEBHOOK_SCHEMES) and not apprise_available():
            raise NotifyConfigError(f"--notify {_redact(url)}: this scheme needs Apprise "
                                    "(pip install 'gpudiag[notify]'); http(s) webhooks need nothing")
        out.append(Target(url=url))
    if command is not None:
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise NotifyConfigError(f"--notify-cmd: {exc}") from None
        if not argv:
            raise NotifyConfigError("--notify-cmd: empty command")
        out.append(Target(argv=argv))
    return tuple(out)


def _import_apprise() -> Any:
    """The apprise module. Its import warns (DeprecationWarning: it shims the standard library's ``imghdr``
    on Python 3.11/3.12); that is Apprise's business, not the operator's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import apprise
    return apprise


def apprise_available() -> bool:
    try:
        _import_apprise()
    except ImportError:
        return False
    return True


def _title(payload: Mapping[str, Any]) -> str:
    states = [f["state"] for f in payload.get("findings", ())]
    return (f"gpudiag: {states.count('new')} new, {states.count('resolved')} resolved, "
            f"{sum(1 for f in payload.get('findings', ()) if f.get('renotify'))} still open")


def _post(url: str, body: bytes, timeout_s: float) -> str | None:
    """POST ``body`` to ``url``: None when the receiver answered 2xx, else one line saying why not."""
    try:
        status, reason = post_status(url, body, timeout_s)
    except WebhookError as exc:
        return str(exc)
    return None if 200 <= status < 300 else f"HTTP {status} {reason}".rstrip()


def _apprise(url: str, payload: Mapping[str, object], body: str) -> str | None:
    with warnings.catch_warnings():  # Apprise loads its plugins on first use: the same import warning
        warnings.simplefilter("ignore", DeprecationWarning)
        sender = _import_apprise().Apprise()
        if not sender.add(url):
            return "Apprise does not understand this URL"
        delivered = sender.notify(title=_title(payload), body=body)
    return None if delivered else "Apprise could not deliver it"


def _run(argv: tuple[str, ...], body: bytes, timeout_s: float) -> str | None:
    try:
        done = subprocess.run(argv, input=body, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return f"no exit within {timeout_s:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return f"exited {done.returncode}" + (f": {why[0][:200]}" if why else "")
    return None


def send(payload: Mapping[str, object], to: tuple[Target, ...], *,
         timeout_s: float = NOTIFY_TIMEOUT_S) -> tuple[str, ...]:
    """Send ``payload`` (JSON values) to each target; one line per failure (empty: all delivered)."""
    text = json.dumps(payload, indent=2, allow_nan=False)
    body = text.encode()
    errors = []
    for target in to:
        if target.url is not None:
            error = (_post(target.url, body, timeout_s) if target.url.startswith(WEBHOOK_SCHEMES)
                     else _apprise(target.url, payload, text))
        else:
            error = _run(target.argv, body, timeout_s)
        if error is not None:
            errors.append(f"notification to {target.label} failed: {error}")
    return tuple(errors)
