"""Ansible inventories (INI and YAML) read as gpudiag inventories: the same hosts and settings as the equivalent
gpudiag inventory, the same reading as Ansible's own (captured ``ansible-inventory --list``), and one line for
what gpudiag does not read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpudiag.model import Host
from gpudiag.sources.ansible_inventory import AnsibleInventoryError, expand_range
from gpudiag.sources.inventory import InventoryError, load_inventory

DATA = Path(__file__).resolve().parents[2] / "data" / "ansible"


def by_name(hosts: tuple[Host, ...]) -> dict[str, tuple[object, ...]]:
    """Each host's settings, its groups as a set (gpudiag keeps file order, Ansible sorts by depth)."""
    return {h.name: (h.address, h.user, h.port, h.identity_file, h.known_hosts, h.jump, frozenset(h.groups))
            for h in hosts}


@pytest.mark.parametrize("name", ["hosts.ini", "hosts.yml"])
def test_same_hosts_and_settings_as_the_gpudiag_inventory(name: str) -> None:
    ansible = load_inventory(DATA / name)
    ours = load_inventory(DATA / "gpudiag.yaml")
    assert by_name(ansible.hosts) == by_name(ours.hosts)
    assert {g: set(m) for g, m in ansible.groups.items()} == {g: set(m) for g, m in ours.groups.items()}
    kind = "INI" if name.endswith(".ini") else "YAML"
    assert ansible.read_as == (f"{DATA / name}: an Ansible {kind} inventory: 24 hosts in 4 groups, host_vars for "
                               "1 hosts, group_vars for 1 groups")
    assert ours.read_as is None


@pytest.mark.parametrize("name", ["hosts.ini", "hosts.yml"])
def test_same_reading_as_ansible_inventory_list(name: str) -> None:
    listed = json.loads((DATA / f"ansible-inventory-list.{name.split('.')[1]}.json").read_text())
    hostvars = listed["_meta"]["hostvars"]
    hosts = {h.name: h for h in load_inventory(DATA / name).hosts}
    assert set(hosts) == set(hostvars)
    for host_name, found in hostvars.items():
        host = hosts[host_name]
        assert (host.address, host.user, host.port, host.identity_file) == (
            found.get("ansible_host"), found.get("ansible_user"), found.get("ansible_port"),
            found.get("ansible_ssh_private_key_file")), host_name
        assert ("ProxyJump" in found["ansible_ssh_common_args"] or " -J " in found["ansible_ssh_common_args"]) == (
            host.jump is not None)

    def members(group: str) -> set[str]:
        entry = listed.get(group, {})
        return set(entry.get("hosts", ())).union(*(members(c) for c in entry.get("children", ())))

    groups = {g for g in listed if g not in ("_meta", "all", "ungrouped")}
    for host in hosts.values():
        assert set(host.groups) == {g for g in groups if host.name in members(g)}, host.name


@pytest.mark.parametrize(("pattern", "names"), [
    ("gpu[01:03]", ("gpu01", "gpu02", "gpu03")),
    ("gpu[1:10:4]", ("gpu1", "gpu5", "gpu9")),
    ("node-[a:c]", ("node-a", "node-b", "node-c")),
    ("r[1:2]-g[1:2].ib", ("r1-g1.ib", "r1-g2.ib", "r2-g1.ib", "r2-g2.ib")),
    ("gpu[:2]", ("gpu0", "gpu1", "gpu2")),
    ("plain", ("plain",)),
])
def test_ranges(pattern: str, names: tuple[str, ...]) -> None:
    assert expand_range(pattern, "f:1") == names


@pytest.mark.parametrize(("pattern", "message"), [
    ("gpu[01:100]", "f:1: host range '[01:100]': pad both ends to the same width (Ansible's rule)"),
    ("gpu[5:1]", "f:1: host range '[5:1]' is empty (it runs backwards)"),
    ("gpu[1-4]", "f:1: host range '[1-4]': expected [start:end] or [start:end:step]"),
    ("gpu[1:4:0]", "f:1: host range '[1:4:0]': the step must be a positive integer"),
])
def test_bad_ranges(pattern: str, message: str) -> None:
    with pytest.raises(AnsibleInventoryError) as excinfo:  # load_inventory raises it as an InventoryError
        expand_range(pattern, "f:1")
    assert str(excinfo.value) == message


def test_ini_host_port_and_ungrouped_hosts(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("login.example:2200 ansible_user=ops\n[gpus]\ngpu[1:2] ansible_host=10.0.0.9\n")
    hosts = load_inventory(path).hosts
    assert hosts == (Host(name="login.example", user="ops", port=2200),
                     Host(name="gpu1", address="10.0.0.9", groups=("gpus",)),
                     Host(name="gpu2", address="10.0.0.9", groups=("gpus",)))


def test_yaml_all_is_no_longer_an_unknown_key(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    gpu01:\n      ansible_host: 10.0.0.1\n")
    assert load_inventory(path).hosts == (Host(name="gpu01", address="10.0.0.1", groups=()),)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("hosts.yml", "all:\n  hosts:\n    gpu01:\n      ansible_user: !vault |\n        $ANSIBLE_VAULT;1.1;AES256\n"
                  "        6162\n",
     "{path}:4: an Ansible Vault value (!vault): gpudiag cannot decrypt it"),
    ("hosts.ini", "$ANSIBLE_VAULT;1.1;AES256\n616263\n",
     "{path}:1: an Ansible Vault encrypted file: gpudiag cannot decrypt it; decrypt it (ansible-vault view) or "
     "write a static inventory with ansible-inventory --list --yaml"),
    ("aws_ec2.yml", "plugin: amazon.aws.aws_ec2\nregions: [us-east-1]\n",
     "{path}:1: an Ansible inventory plugin configuration (plugin: amazon.aws.aws_ec2): gpudiag reads static "
     "inventories; ansible-inventory -i {path} --list --yaml writes one"),
    ("hosts.ini", "[gpus]\ngpu01 ansible_ssh_common_args='-o ProxyCommand=\"ssh -W %h:%p bastion\"'\n",
     "{path}:2: ProxyCommand is not supported: use -o ProxyJump=[user@]bastion[:port]"),
    ("hosts.ini", "[gpus]\ngpu01 ansible_ssh_common_args='-J a@b1,b2'\n",
     "{path}:2: ProxyJump 'a@b1,b2': gpudiag takes one jump host, [user@]host[:port]"),
    ("hosts.ini", "[gpus]\ngpu01\n[gpus:vars]\nansible_user={{ lookup('env', 'USER') }}\n",
     "{path}:4: ansible_user: a Jinja2 template ({{{{ lookup('env', 'USER') }}}}): gpudiag does not evaluate "
     "templates"),
    ("hosts.ini", "[gpus]\ngpu01 ansible_port=ssh\n", "{path}:2: ansible_port: expected 1-65535, got 'ssh'"),
    ("hosts.ini", "[gpus:facts]\ngpu01\n",
     "{path}:1: section [gpus:facts]: expected [group], [group:vars] or [group:children]"),
    ("hosts.ini", "[gpus]\ngpu01 become\n", "{path}:2: expected key=value after the host name, got 'become'"),
    ("hosts.yml", "all:\n  children:\n    gpus:\n      host:\n        gpu01:\n",
     "{path}:4: group 'gpus': unknown key 'host' (Ansible's are children, hosts, vars)"),
    ("hosts.ini", "[a:children]\nb\n[b:children]\na\n", "{path}: group 'a' is its own child (a loop in children)"),
])
def test_what_is_not_read_is_one_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InventoryError) as excinfo:
        load_inventory(path)
    assert str(excinfo.value) == message.format(path=path)


def test_a_dynamic_inventory_script_is_not_run(tmp_path: Path) -> None:
    script = tmp_path / "ec2.py"
    marker = tmp_path / "ran"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho '{{}}'\n")
    script.chmod(0o755)
    with pytest.raises(InventoryError) as excinfo:
        load_inventory(script)
    assert str(excinfo.value) == (f"{script}:1: an executable Ansible dynamic inventory script: gpudiag does not "
                                  f"run it; write a static one with ansible-inventory -i {script} --list --yaml > "
                                  "hosts.yml")
    assert not marker.exists()


def test_group_vars_folder_and_vault_file(tmp_path: Path) -> None:
    shutil.copy(DATA / "hosts.ini", tmp_path / "hosts.ini")
    (tmp_path / "group_vars" / "rack2").mkdir(parents=True)
    (tmp_path / "group_vars" / "rack2" / "10-ssh.yml").write_text("ansible_user: ops2\n")
    (tmp_path / "group_vars" / "rack2" / "20-port.yaml").write_text("ansible_port: 2200\n")
    hosts = {h.name: h for h in load_inventory(tmp_path / "hosts.ini").hosts}
    assert (hosts["rack2-gpu1"].user, hosts["rack2-gpu1"].port) == ("ops2", 2200)
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "gpu02.yml").write_text("$ANSIBLE_VAULT;1.1;AES256\n6162\n")
    with pytest.raises(InventoryError, match=r"host_vars/gpu02.yml:1: an Ansible Vault encrypted file"):
        load_inventory(tmp_path / "hosts.ini")


def test_gpudiag_inventories_are_not_taken_for_ansible() -> None:
    repo_inventory = Path(__file__).resolve().parents[3] / "inventory.yaml"
    assert load_inventory(repo_inventory).read_as is None
