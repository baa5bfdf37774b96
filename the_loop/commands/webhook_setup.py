"""``the-loop webhook --print-setup``: what to enter on GitHub, and how GitHub reaches here.

Reads the config and whether the secret's variable is set; starts nothing, sends nothing.
"""

from __future__ import annotations

import os

from the_loop.commands.common import Context
from the_loop.commands.render import Result


def setup_result(context: Context) -> Result:
    """The webhook's settings on GitHub, and the ways to reach a machine with no public
    address, from ``webhook.*`` and ``polling.repositories``."""
    from the_loop.webhook.settings import HANDLED_EVENTS, is_loopback, url_of

    config = context.config
    host, path = config.get_str("webhook.host"), config.get_str("webhook.path")
    port = int(config.get_float("webhook.port"))
    variable = config.get_str("webhook.secretEnv")
    local_url = url_of(host, port, path)
    public = not is_loopback(host)
    payload_url = local_url if public else f"https://<your relay's public address>{path}"
    repositories = config.get_str_list("polling.repositories") or ["OWNER/REPO"]
    events = ",".join(HANDLED_EVENTS)
    forward = [
        f"gh webhook forward --repo={repository} --events={events} --url={local_url} "
        f'--secret="${variable}"'
        for repository in repositories
    ]
    item = {
        "payloadUrl": payload_url,
        "listensOn": local_url,
        "contentType": "application/json",
        "events": list(HANDLED_EVENTS),
        "secretEnv": variable,
        "secretSet": bool(os.environ.get(variable)),
        "repositories": repositories,
        "forward": forward,
    }
    secret_said = "set here" if item["secretSet"] else "NOT set here: the receiver will not start"
    lines = [
        "On GitHub: each repository's Settings → Webhooks → Add webhook (or the organization's):",
        f"  Payload URL:     {payload_url}",
        f"                   (this machine listens on {local_url})",
        "  Content type:    application/json",
        f"  Secret:          the value of ${variable} on this machine ({secret_said});",
        "                   make one with `openssl rand -hex 32` and give both the same value",
        "  SSL verification: enabled",
        "  Which events:    Let me select individual events: Issue comments, Issues, Pull",
        "                   requests, Pull request reviews, Pull request review comments,",
        "                   Check runs, Statuses",
        f"                   ({', '.join(HANDLED_EVENTS)})",
        "  Active:          yes",
        "",
        "Reaching this machine without a public address:",
        "  To try it, the GitHub CLI forwards a repository's deliveries here for as long as it",
        "  runs (`gh extension install cli/gh-webhook` first; for testing, not production):",
        *(f"    {command}" for command in forward),
        "  For real use, a relay or tunnel from a public HTTPS address to",
        f"  {local_url}: a reverse proxy on a host you own (reached over",
        f"  `ssh -N -R {port}:127.0.0.1:{port} you@that-host`), or a tunnel service.",
        "  Keep webhook.host on a loopback address, so the relay is the only way in.",
        "",
        "The receiver keeps each delivery in local/webhook-inbox/; acting on the inbox",
        "(pastes, commands, closures) comes in a later release: the poller does that now.",
    ]
    return Result(items=(item,), text=lambda: lines)
