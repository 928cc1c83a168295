"""Ansible's host ranges and connection variables, as gpudiag's hosts (for :mod:`gpudiag.sources.ansible_inventory`).

Of the variables, gpudiag uses ``ansible_host``, ``ansible_user``, ``ansible_port``,
``ansible_ssh_private_key_file`` (and their older ``ansible_ssh_*`` spellings), and from
``ansible_ssh_common_args``/``ansible_ssh_extra_args`` the options ``-o ProxyJump=`` / ``-J`` (the jump host) and
``-o UserKnownHostsFile=``; other SSH options are left to the SSH config. Every other variable is ignored. A
Jinja2 template (``{{ }}``) in a variable gpudiag uses, a ``ProxyCommand`` and a ProxyJump through several hops
are refused with one line naming the file and line.
"""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Mapping

from gpudiag.model import Host
from gpudiag.model.ssh_target import not_ascii, not_printable

_RANGE = re.compile(r"\[([^\]]*)\]")
_JUMP = re.compile(r"(?:[^@\s:,]+@)?[^@\s:/,]+(?::([0-9]+))?")
_SSH_WORDS = ("ansible_host", "ansible_user", "ansible_port", "ansible_ssh_private_key_file")
_ALIASES = {"ansible_ssh_host": "ansible_host", "ansible_ssh_user": "ansible_user",
            "ansible_ssh_port": "ansible_port", "ansible_private_key_file": "ansible_ssh_private_key_file"}


class AnsibleInventoryError(Exception):
    """An Ansible inventory gpudiag cannot read; the message is one line naming the file (and line).
    :func:`gpudiag.sources.inventory.load_inventory` raises it as its own ``InventoryError``."""


def expand_range(pattern: str, where: str) -> tuple[str, ...]:
    """Ansible's host ranges: ``gpu[01:16]``, ``gpu[1:9:2]``, ``node[a:c]``; several brackets multiply."""
    if (problem := not_ascii(pattern)) is not None:  # "２２７.0.1.5" would resolve to 227.0.1.5
        raise AnsibleInventoryError(f"{where}: bad host name {pattern!r}: {problem}")
    match = _RANGE.search(pattern)
    if not match:
        if not pattern or any(c.isspace() or c in "[]," for c in pattern):
            raise AnsibleInventoryError(f"{where}: bad host name {pattern!r}")
        return (pattern,)
    head, tail = pattern[: match.start()], pattern[match.end():]
    parts = match.group(1).split(":")
    if len(parts) not in (2, 3):
        raise AnsibleInventoryError(f"{where}: host range {match.group(0)!r}: expected [start:end] or [start:end:step]")
    begin, end, step_text = parts[0] or "0", parts[1], parts[2] if len(parts) == 3 else "1"
    if not step_text.isdigit() or int(step_text) < 1:
        raise AnsibleInventoryError(f"{where}: host range {match.group(0)!r}: the step must be a positive integer")
    step = int(step_text)
    if begin.isdigit() and end.isdigit():
        if begin.startswith("0") and len(begin) > 1 and len(begin) != len(end):
            raise AnsibleInventoryError(f"{where}: host range {match.group(0)!r}: pad both ends to the same width "
                                 "(Ansible's rule)")
        width = len(begin) if begin.startswith("0") else 0
        items = [str(n).zfill(width) for n in range(int(begin), int(end) + 1, step)]
    elif len(begin) == len(end) == 1 and begin in string.ascii_letters and end in string.ascii_letters:
        letters = string.ascii_letters
        items = list(letters[letters.index(begin): letters.index(end) + 1: step])
    else:
        raise AnsibleInventoryError(f"{where}: host range {match.group(0)!r}: expected numbers or single letters")
    if not items:
        raise AnsibleInventoryError(f"{where}: host range {match.group(0)!r} is empty (it runs backwards)")
    rests = expand_range(tail, where) if _RANGE.search(tail) else (tail,)
    names = tuple(f"{head}{item}{rest}" for item in items for rest in rests)
    bad = next((n for n in names if any(c.isspace() or c in "[]," for c in n)), None)
    if bad is not None:
        raise AnsibleInventoryError(f"{where}: bad host name {bad!r}")
    return names


def host_from_vars(name: str, merged: Mapping[str, tuple[object, str]], groups: tuple[str, ...]) -> Host:
    """The host ``name`` with the connection settings of its merged vars (name -> (value, "file:line"))."""
    values: dict[str, tuple[object, str]] = {}
    for key, item in merged.items():
        values[_ALIASES.get(key, key)] = item

    def text(key: str) -> str | None:
        if key not in values:
            return None
        value, where = values[key]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise AnsibleInventoryError(f"{where}: {key}: expected a string, got {value!r}")
        if "{{" in str(value) or "{%" in str(value):
            raise AnsibleInventoryError(f"{where}: {key}: a Jinja2 template ({value}): gpudiag does not evaluate "
                                        "templates")
        problem = (not_printable if key == "ansible_ssh_private_key_file" else not_ascii)(str(value))
        if key in _SSH_WORDS and problem is not None:  # a fullwidth digit would reach another address
            raise AnsibleInventoryError(f"{where}: {key}: {str(value)!r} {problem}")
        return str(value)

    port_text = text("ansible_port")
    if port_text is not None and not (port_text.isascii() and port_text.isdigit() and 1 <= int(port_text) <= 65535):
        raise AnsibleInventoryError(f"{values['ansible_port'][1]}: ansible_port: expected 1-65535, got {port_text!r}")
    jump, known_hosts = None, None
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        args = text(key)
        if args is not None:
            jump, known_hosts = _ssh_args(args, values[key][1], jump, known_hosts)
    return Host(name=name, address=text("ansible_host"), user=text("ansible_user"),
                port=int(port_text) if port_text else None, identity_file=text("ansible_ssh_private_key_file"),
                known_hosts=known_hosts, jump=jump, groups=groups)


def _ssh_args(args: str, where: str, jump: str | None, known_hosts: str | None) -> tuple[str | None, str | None]:
    """The jump host and known_hosts file that ``ansible_ssh_common_args`` asks for."""
    try:
        words = shlex.split(args)
    except ValueError as exc:
        raise AnsibleInventoryError(f"{where}: ansible_ssh_common_args: {exc}") from None
    options: list[tuple[str, str]] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word in ("-o", "-J") and index + 1 < len(words):
            value, index = words[index + 1], index + 2
        elif word.startswith(("-o", "-J")) and len(word) > 2:
            value, index = word[2:], index + 1
        else:
            index += 1
            continue
        if word.startswith("-J"):
            options.append(("proxyjump", value))
        else:
            key, _, option = value.replace(" ", "=", 1).partition("=")
            options.append((key.lower(), option.strip()))
    for key, value in options:
        if key == "proxyjump":
            if not _JUMP.fullmatch(value):
                raise AnsibleInventoryError(f"{where}: ProxyJump {value!r}: gpudiag takes one jump host, "
                                            "[user@]host[:port]")
            jump = value
        elif key == "proxycommand":
            raise AnsibleInventoryError(f"{where}: ProxyCommand is not supported: use -o "
                                        "ProxyJump=[user@]bastion[:port]")
        elif key == "userknownhostsfile":
            known_hosts = value.split()[0] if value else None
    return jump, known_hosts
