"""The YAML inventory: precedence, selection, ad hoc hosts, and one-line errors that name file and line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gpudiag.model import Host
from gpudiag.sources.inventory import (
    Inventory,
    InventoryError,
    describe,
    hosts_from_patterns,
    load_inventory,
    select,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
KNOWN_VARS = "(known: address, identity_file, jump, known_hosts, logs, port, user)"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _load(tmp_path: Path, text: str) -> Inventory:
    return load_inventory(_write(tmp_path, text))


def _by_name(inventory: Inventory) -> dict[str, Host]:
    return {host.name: host for host in inventory.hosts}


def test_the_shipped_inventory_loads() -> None:
    inventory = load_inventory(REPO_ROOT / "inventory.yaml")
    hosts = _by_name(inventory)
    assert len(inventory.hosts) == 24
    assert hosts["gpu01"] == Host(
        name="gpu01",
        address="10.0.0.11",
        user="ubuntu",
        port=22,
        identity_file="~/.ssh/cluster_ed25519",
        known_hosts="~/.ssh/known_hosts",
        groups=("rack1",),
    )
    assert hosts["gpu16"].port == 2222
    assert hosts["gpu16"].groups == ("rack1", "inference")
    assert hosts["gpu-spare"].user is None
    assert hosts["bastion-only"].jump == "ops@bastion.example:2222"
    assert hosts["bastion-only"].groups == ()
    assert len(hosts["rack2-gpu1"].logs) == 2
    assert dict(inventory.settings) == {"busy_utilization_pct": 90, "low_power_pct": 60}
    assert set(inventory.groups) == {"rack1", "rack2", "inference"}


def test_precedence_defaults_then_groups_in_file_order_then_hosts(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        defaults: {user: ubuntu, port: 22, identity_file: ~/.ssh/default}
        groups:
          rack1:
            hosts: ["gpu[01-03]"]
            vars: {user: rack1user, port: 2201}
          special:
            hosts: [gpu02, gpu03]
            vars: {port: 2202, known_hosts: /etc/ssh/known}
        hosts:
          "gpu[02-03]": {identity_file: ~/.ssh/pattern}
          gpu03: {port: 2203, address: 10.0.0.13}
        """,
    )
    assert inventory.hosts == (
        Host(name="gpu01", user="rack1user", port=2201, identity_file="~/.ssh/default", groups=("rack1",)),
        Host(
            name="gpu02",
            user="rack1user",
            port=2202,
            identity_file="~/.ssh/pattern",
            known_hosts="/etc/ssh/known",
            groups=("rack1", "special"),
        ),
        Host(
            name="gpu03",
            address="10.0.0.13",
            user="rack1user",
            port=2203,
            identity_file="~/.ssh/pattern",
            known_hosts="/etc/ssh/known",
            groups=("rack1", "special"),
        ),
    )
    assert dict(inventory.groups) == {"rack1": ("gpu01", "gpu02", "gpu03"), "special": ("gpu02", "gpu03")}
    assert dict(inventory.settings) == {}


def test_hosts_keep_order_of_appearance_and_ungrouped_hosts_are_targets(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        hosts:
          login: {address: 10.0.0.2}
          gpu02:
        groups:
          a: {hosts: [gpu02, gpu01, gpu02]}
          b:
            hosts:
              - rack[1-2]-gpu[1-2]
              - gpu01
        """,
    )
    assert [h.name for h in inventory.hosts] == [
        "login",
        "gpu02",
        "gpu01",
        "rack1-gpu1",
        "rack1-gpu2",
        "rack2-gpu1",
        "rack2-gpu2",
    ]
    assert _by_name(inventory)["login"] == Host(name="login", address="10.0.0.2")
    assert _by_name(inventory)["gpu01"].groups == ("a", "b")


def test_null_unsets_a_lower_level_and_empty_sections_are_allowed(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        defaults: {user: ubuntu, port: 22, logs: [/var/log/syslog]}
        groups:
        hosts:
          gpu01: {user: null, port: ~, logs: null}
        checks:
        """,
    )
    assert inventory.hosts == (Host(name="gpu01"),)


def test_anchors_and_merge_keys(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        groups:
          rack1:
            hosts: [gpu01]
            vars: &common {user: ops, port: 2222}
          rack2:
            hosts: [gpu02]
            vars:
              <<: *common
              port: 22
        """,
    )
    assert [(h.user, h.port) for h in inventory.hosts] == [("ops", 2222), ("ops", 22)]


def test_logs_are_carried_as_written(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        hosts:
          gpu01:
            logs:
              - /var/log/syslog
              - {path: /var/log/kern.log, grep: Xid}
        """,
    )
    assert inventory.hosts[0].logs == ("/var/log/syslog", {"path": "/var/log/kern.log", "grep": "Xid"})


def test_checks_are_kept_raw(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        hosts: {gpu01: }
        checks: {busy_utilization_pct: 90, low_power_pct: 60.5, some_future_threshold: 3}
        """,
    )
    assert dict(inventory.settings) == {
        "busy_utilization_pct": 90,
        "low_power_pct": 60.5,
        "some_future_threshold": 3,
    }


BROKEN = [
    pytest.param(
        """
        groups:
          rack1:
            hosts: [gpu[01-16], gpu-spare]
        """,
        "{file}:3: YAML syntax error: expected ',' or ']', but got '[' (while parsing a flow sequence); "
        'quote host patterns inside [ ] lists, e.g. ["gpu[01-16]"], or use a "- " list',
        id="unquoted-pattern-in-flow-list",
    ),
    pytest.param(
        """
        defaults:
          user: ubuntu
         port: 22
        """,
        "{file}:3: YAML syntax error: expected <block end>, but found '<block mapping start>' "
        "(while parsing a block mapping)",
        id="bad-indentation",
    ),
    pytest.param(
        "hosts:\n\tgpu01:\n",
        "{file}:2: YAML syntax error: found character '\\t' that cannot start any token "
        "(while scanning for the next token)",
        id="tab",
    ),
    pytest.param(
        """
        defaults:
          user: ubuntu
        groups:
          rack1:
            hosts: ["gpu[01-16]"]
            vars:
              identity_file: ~/.ssh/key
              usr: admin
        """,
        "{file}:8: groups.rack1.vars: unknown key 'usr' " + KNOWN_VARS,
        id="unknown-var-in-group",
    ),
    pytest.param(
        """
        hosts:
          gpu01: {adress: 10.0.0.1}
        """,
        "{file}:2: hosts.gpu01: unknown key 'adress' " + KNOWN_VARS,
        id="unknown-var-in-host",
    ),
    pytest.param(
        """
        hosts:
          gpu01:
        grups:
          rack1: {hosts: [gpu01]}
        """,
        "{file}:3: unknown key 'grups' (known: checks, defaults, groups, hosts)",
        id="unknown-top-level-key",
    ),
    pytest.param(
        """
        groups:
          rack1:
            host: [gpu01]
        """,
        "{file}:3: groups.rack1: unknown key 'host' (known: hosts, vars)",
        id="unknown-key-in-group",
    ),
    pytest.param(
        "hosts:\n  gpu01:\n---\nhosts:\n  gpu02:\n",
        "{file}:3: YAML syntax error: expected a single document in the stream, but found another document",
        id="two-documents",
    ),
    pytest.param(
        "hosts:\n  gpu01: {user: \x00}\n",
        "{file}:2: YAML error: special characters are not allowed",
        id="control-character",
    ),
    pytest.param(
        """
        hosts:
          gpu01:
            user: !env USER
        """,
        "{file}:3: hosts.gpu01.user: cannot read this value: "
        "could not determine a constructor for the tag '!env'",
        id="unknown-tag",
    ),
    pytest.param(
        """
        defaults:
          user: ubuntu
          port: 70000
        hosts:
          gpu01:
        """,
        "{file}:3: defaults.port: expected an integer from 1 to 65535, got the number 70000",
        id="port-out-of-range",
    ),
    pytest.param(
        """
        hosts:
          gpu01:
            port: "22"
        """,
        "{file}:3: hosts.gpu01.port: expected an integer from 1 to 65535, got the string '22'",
        id="port-quoted",
    ),
    pytest.param(
        """
        groups:
          rack1:
            hosts: [gpu01]
            vars: {port: yes}
        """,
        "{file}:4: groups.rack1.vars.port: expected an integer from 1 to 65535, got the boolean yes",
        id="port-boolean",
    ),
    pytest.param(
        """
        groups:
          rack1:
            hosts: gpu[01-16]
        """,
        "{file}:3: groups.rack1.hosts: expected a list of host names or patterns, got the string "
        """'gpu[01-16]' (quote host patterns inside [ ] lists, e.g. ["gpu[01-16]"], or use a "- " list)""",
        id="group-hosts-not-a-list",
    ),
    pytest.param(
        """
        groups:
          rack1:
            hosts:
              - gpu01
              - gpu[1-
        """,
        "{file}:5: groups.rack1.hosts[1]: bad host pattern 'gpu[1-': '[' is never closed",
        id="bad-pattern-in-group",
    ),
    pytest.param(
        """
        groups:
          rack1:
            hosts: ["gpu[5-1]"]
        """,
        "{file}:3: groups.rack1.hosts[0]: bad host pattern 'gpu[5-1]': range '5-1' runs backwards",
        id="backwards-range",
    ),
    pytest.param(
        """
        hosts:
          gpu[a-b]: {user: x}
        """,
        "{file}:2: hosts: bad host pattern 'gpu[a-b]': 'a-b' is not a number or a range like 1-8",
        id="bad-pattern-as-host-key",
    ),
    pytest.param(
        """
        hosts:
          gpu01: {user: a}
          gpu02:
          gpu01: {user: b}
        """,
        "{file}:4: hosts: duplicate key 'gpu01'",
        id="duplicate-host",
    ),
    pytest.param(
        """
        groups:
          rack1:
            vars: {user: x}
        """,
        "{file}:2: groups.rack1: missing key 'hosts'",
        id="group-without-hosts",
    ),
    pytest.param(
        """
        groups:
          gpu01: {hosts: [gpu01]}
        """,
        "{file}:2: groups.gpu01: a host has this name too; rename one",
        id="group-named-like-a-host",
    ),
    pytest.param(
        """
        groups:
          "rack[1]": {hosts: [gpu01]}
        """,
        "{file}:2: groups.rack[1]: a group name may hold only letters, digits, '.', '_' and '-'",
        id="bad-group-name",
    ),
    pytest.param(
        """
        hosts:
          "gpu[01-02]": {address: 10.0.0.1}
        """,
        "{file}:2: hosts.gpu[01-02]: one address for 2 hosts",
        id="one-address-for-a-pattern",
    ),
    pytest.param(
        """
        hosts:
          gpu01: {jump: "ops@bastion:99999"}
        """,
        "{file}:2: hosts.gpu01.jump: expected [user@]host[:port] (an IPv6 host in brackets: [::1]:22) with a "
        "port 1-65535, got 'ops@bastion:99999'",
        id="bad-jump",
    ),
    pytest.param(
        """
        hosts:
          gpu01:
            user: 42
        """,
        "{file}:3: hosts.gpu01.user: expected a string, got the number 42",
        id="user-not-a-string",
    ),
    pytest.param(
        """
        hosts:
          gpu01:
            logs: /var/log/syslog
        """,
        "{file}:3: hosts.gpu01.logs: expected a list of log paths or mappings, "
        "got the string '/var/log/syslog'",
        id="logs-not-a-list",
    ),
    pytest.param(
        """
        hosts:
          gpu01:
        checks:
          busy_utilization_pct: 90
          low_power_pct: 60%
        """,
        "{file}:5: checks.low_power_pct: expected a number, got the string '60%'",
        id="check-not-a-number",
    ),
    pytest.param(
        """
        - gpu01
        - gpu02
        """,
        "{file}:1: expected a mapping, got a list",
        id="top-level-list",
    ),
    pytest.param(
        """
        defaults: {user: ubuntu}
        """,
        "{file}:1: no hosts: list them under 'groups:' or 'hosts:'",
        id="no-hosts",
    ),
    pytest.param(
        """
        hosts:
          gpu01:
            user: "ubuntu\\0root"
        """,
        "{file}:3: hosts.gpu01.user: 'ubuntu\\x00root' holds a control character",
        id="nul-in-user",
    ),
    pytest.param(
        "# nothing here yet\n",
        "{file}:1: the inventory is empty: list hosts under 'groups:' or 'hosts:'",
        id="empty-file",
    ),
]


@pytest.mark.parametrize(("text", "message"), BROKEN)
def test_broken_inventories_fail_with_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InventoryError) as excinfo:
        load_inventory(path)
    assert str(excinfo.value) == message.format(file=path)
    assert "\n" not in str(excinfo.value)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(InventoryError) as excinfo:
        load_inventory(path)
    assert str(excinfo.value) == f"{path}: cannot read the inventory: No such file or directory"


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_bytes(b"hosts:\n  gpu01: {user: \xff}\n")
    with pytest.raises(InventoryError) as excinfo:
        load_inventory(path)
    assert str(excinfo.value) == f"{path}:2: not UTF-8 text"


SWEEP = (
    Host(name="gpu01", groups=("rack1",)),
    Host(name="gpu02", groups=("rack1", "inference")),
    Host(name="gpu03", groups=("rack1",)),
    Host(name="rack2-gpu1", groups=("rack2",)),
    Host(name="rack2-gpu2", groups=("rack2", "inference")),
    Host(name="login"),
)


@pytest.mark.parametrize(
    ("limit", "exclude", "names"),
    [
        ((), (), ["gpu01", "gpu02", "gpu03", "rack2-gpu1", "rack2-gpu2", "login"]),
        (("rack1",), (), ["gpu01", "gpu02", "gpu03"]),
        (("inference",), (), ["gpu02", "rack2-gpu2"]),
        (("rack[1-2]",), ("gpu02",), ["gpu01", "gpu03", "rack2-gpu1", "rack2-gpu2"]),
        (("login", "rack2"), (), ["rack2-gpu1", "rack2-gpu2", "login"]),
        (("rack2,gpu[01-02]",), (), ["gpu01", "gpu02", "rack2-gpu1", "rack2-gpu2"]),
        ((), ("gpu[01-03]",), ["rack2-gpu1", "rack2-gpu2", "login"]),
        ((), ("gpu[04-99]", "nosuchhost"), ["gpu01", "gpu02", "gpu03", "rack2-gpu1", "rack2-gpu2", "login"]),
        (("rack1",), ("rack1-gpu[1-3]", "gpu0[1-3]"), []),
    ],
)
def test_select(limit: tuple[str, ...], exclude: tuple[str, ...], names: list[str]) -> None:
    assert [h.name for h in select(SWEEP, limit, exclude)] == names


@pytest.mark.parametrize(
    ("limit", "exclude", "message"),
    [
        (("rack9",), (), "--limit 'rack9': no group or host named rack9"),
        (("gpu[01-05]",), (), "--limit 'gpu[01-05]': no group or host named gpu[04-05]"),
        (("rack1,gpuu02",), (), "--limit 'rack1,gpuu02': no group or host named gpuu02"),
        (("gpu[1-",), (), "--limit: bad host pattern 'gpu[1-': '[' is never closed"),
        ((), ("gpu[5-1]",), "--exclude: bad host pattern 'gpu[5-1]': range '5-1' runs backwards"),
    ],
)
def test_select_rejects(limit: tuple[str, ...], exclude: tuple[str, ...], message: str) -> None:
    with pytest.raises(InventoryError) as excinfo:
        select(SWEEP, limit, exclude)
    assert str(excinfo.value) == message


def test_hosts_from_patterns() -> None:
    assert hosts_from_patterns(
        ["gpu[1-2]", "gpu2,login"], user="ops", port=2222, identity_file="~/.ssh/k"
    ) == (
        Host(name="gpu1", user="ops", port=2222, identity_file="~/.ssh/k"),
        Host(name="gpu2", user="ops", port=2222, identity_file="~/.ssh/k"),
        Host(name="login", user="ops", port=2222, identity_file="~/.ssh/k"),
    )
    assert hosts_from_patterns("gpu[01-100]")[-1] == Host(name="gpu100")


@pytest.mark.parametrize("user", ["ops\x00root", "ops root", "ops\x1b]0;x\x07"])
def test_a_user_with_a_nul_or_space_fails_before_any_connection(user: str) -> None:
    with pytest.raises(InventoryError) as excinfo:
        hosts_from_patterns(["gpu1"], user=user)
    assert str(excinfo.value) == f"user {user!r} holds a space or a control character"


@pytest.mark.parametrize(
    ("patterns", "port", "message"),
    [
        ((), None, "no hosts given: name at least one host or pattern"),
        (("gpu[1-",), None, "host pattern: bad host pattern 'gpu[1-': '[' is never closed"),
        (("ops@gpu1:99999",), None, "host pattern: bad target 'ops@gpu1:99999': the port must be 1-65535, got "
                                    "'99999'"),
        (("@ops@gpu1",), None, "@ops@gpu1: expected @group or @source:group (letters, digits, '_', '.', '-'), "
                               "got '@ops@gpu1'"),
        (("gpu1",), 0, "port must be an integer from 1 to 65535, got 0"),
    ],
)
def test_hosts_from_patterns_rejects(patterns: tuple[str, ...], port: int | None, message: str) -> None:
    with pytest.raises(InventoryError) as excinfo:
        hosts_from_patterns(patterns, port=port)
    assert str(excinfo.value) == message


def test_describe_gives_effective_settings_as_plain_values() -> None:
    host = Host(name="gpu01", address="10.0.0.11", user="ubuntu", port=22, groups=("rack1",), logs=("/x",))
    assert describe([host, Host(name="login")]) == [
        {
            "name": "gpu01",
            "target": "10.0.0.11",
            "address": "10.0.0.11",
            "user": "ubuntu",
            "port": 22,
            "identity_file": None,
            "known_hosts": None,
            "jump": None,
            "groups": ["rack1"],
            "logs": ["/x"],
        },
        {
            "name": "login",
            "target": "login",
            "address": None,
            "user": None,
            "port": None,
            "identity_file": None,
            "known_hosts": None,
            "jump": None,
            "groups": [],
            "logs": [],
        },
    ]
