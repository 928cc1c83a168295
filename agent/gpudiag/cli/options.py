"""The command-line options that several gpudiag commands share, defined once (typer option objects)."""

from __future__ import annotations

import typer

from gpudiag.model.choices import Source, TextFormat
from gpudiag.report import OutputFormat

INVENTORY = typer.Option(None, "--inventory", "-i", help="Inventory YAML file.")
USER = typer.Option(None, "--user", "-u", help="SSH user for the targets.")
PORT = typer.Option(None, "--port", "-p", help="SSH port for the targets.")
IDENTITY_FILE = typer.Option(None, "--identity-file", help="Private key (loaded once per run).")
JUMP = typer.Option(None, "--jump", "-J", help="Reach every host through this bastion, [user@]host[:port] "
                    "(ssh -J; an IPv6 one in brackets: ops@[::1]:22).")
LIMIT = typer.Option([], "--limit", help="Only these groups or host patterns (repeatable).")
EXCLUDE = typer.Option([], "--exclude", help="Leave out these host patterns (repeatable).")
FORMAT = typer.Option(OutputFormat.TABLE, "--format", "-f", help="table, json or html (one self-contained page; "
                      "sweep writes it to --output FILE).")
CONCURRENCY = typer.Option(256, "--concurrency", min=1, help="Hosts in flight at once.")
CONNECT_TIMEOUT = typer.Option(10.0, "--connect-timeout", min=0.1, help="Seconds from the start of the TCP "
                               "connect to a logged-in session: SSH banner, key exchange and authentication "
                               "included (a dead host costs this much; the shorter of this and --login-timeout "
                               "fires).")
LOGIN_TIMEOUT = typer.Option(10.0, "--login-timeout", min=0.1, help="Seconds from the TCP connection made to a "
                             "logged-in session: SSH banner, key exchange and authentication. Whichever of the "
                             "two timeouts fires, the host is unreachable (timeout).")
TIMEOUT = typer.Option(30.0, "--timeout", min=1.0, help="Per-host deadline for the collection (seconds); the "
                       "remote process is ended.")
SAMPLES = typer.Option(5, "--samples", min=1, max=600, help="Samples per GPU.")
INTERVAL = typer.Option(0.5, "--interval", min=0.0, max=60.0, help="Seconds between samples.")
SOURCE = typer.Option(Source.AUTO, "--source", help="auto: NVML where the bundled binding loads on the node, else "
                      "nvidia-smi; nvidia-smi: never NVML.")
KNOWN_HOSTS = typer.Option(None, "--known-hosts", help="known_hosts file to trust (default: ~/.ssh/known_hosts "
                           "and gpudiag's own); with --accept-new-host-keys, new keys are recorded in it.")
SSH_CONFIG = typer.Option(None, "--ssh-config", "-F", help="OpenSSH client config to read instead of "
                          "~/.ssh/config (HostName, User, Port, IdentityFile...).")
ACCEPT_NEW = typer.Option(False, "--accept-new-host-keys", help="Record keys of hosts never seen before (never "
                          "changed ones), like StrictHostKeyChecking=accept-new: in --known-hosts FILE (or the "
                          "inventory's known_hosts:) when given, else in gpudiag's own known_hosts.")
LOG = typer.Option([], "--log", help="Also scan this log (repeatable): a path (~ is the node's home) or @kernel "
                   "(journalctl -k / dmesg: Xids).")
PACK = typer.Option([], "--pack", help="A signature pack file (YAML) to use too (repeatable).")
LOG_TAIL_MIB = typer.Option(8.0, "--log-tail-mib", min=0.001, max=1024.0, help="Scan only the last N MiB of "
                            "each log (and its rotations).")
SAMPLES_DETAIL = typer.Option(False, "--samples-detail", help="JSON: also every raw sample of each GPU (by "
                              "default each GPU's combined readings and its sample count).")
QUIET = typer.Option(False, "--quiet", "-q", help="For cron: print nothing when all is well (exit 0), only the "
                     "findings when not.")
FOLD = typer.Option(True, "--fold/--no-fold", help="Fold hosts (and GPUs of a host) that read the same into one "
                    "row, as clush -b does; --no-fold shows every row (the JSON always has every host).")
PROGRESS = typer.Option(None, "--progress/--no-progress", help="Live progress on stderr while hosts answer "
                        "(default: when stdout and stderr are a terminal and not --quiet).", show_default=False)
WORKERS = typer.Option("1", "--workers", metavar="N|auto", help="Processes that share the sweep, each a shard "
                       "of the hosts with its own event loop, merged into one report (auto: one per usable core, "
                       "at most 8, and at least 50 hosts each).")
MAX_STARTUPS = typer.Option(None, "--max-startups", min=1, help="SSH handshakes under way at once per bastion "
                            "and per sshd address (default 8: under OpenSSH's MaxStartups 10, past which sshd "
                            "drops new connections). A logged-in session holds none.")
CONNECT_RATE = typer.Option(None, "--connect-rate", metavar="N/s", help="New SSH connections a second at most, "
                            "e.g. 50/s or 3000/min (default: no rate, only --max-startups).")
# inventory and grep print a table (text) or JSON; --json was their flag before --format (kept, hidden).
TEXT_FORMAT = typer.Option(TextFormat.TABLE, "--format", "-f", help="table or json.")
JSON_ALIAS = typer.Option(False, "--json", hidden=True, help="Deprecated: --format json.")


def wants_json(fmt: TextFormat, deprecated_json: bool) -> bool:
    """Whether ``--format`` (or the deprecated ``--json``, saying so on stderr) asks for JSON."""
    if deprecated_json:
        typer.echo("gpudiag: --json is deprecated; use --format json", err=True)
    return deprecated_json or fmt is TextFormat.JSON
