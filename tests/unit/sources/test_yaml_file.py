"""The one YAML reader: inventories and packs refuse alias bombs, self-containing values, deep nesting and huge
files the same way, with one line naming the file and the line, before anything is built from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudiag.logs.packs import PackError, load_pack
from gpudiag.sources import yaml_file
from gpudiag.sources.inventory import InventoryError, load_inventory

# 8 values, then 8 aliases of the level below, 7 times: 8**8 = 16.7 million values in ~300 bytes.
BOMB = ["&l0 [x, x, x, x, x, x, x, x]"] + [f"&l{i} [{', '.join([f'*l{i - 1}'] * 8)}]" for i in range(1, 8)]


def _inventory(tmp_path: Path, nested: list[str]) -> Path:
    """An inventory whose one log entry carries ``nested`` (one list item per line) under an extra key."""
    lines = ["defaults:", "  logs:", "    - path: /var/log/x.log", "      extra:"]
    lines += [f"        - {item}" for item in nested]
    path = tmp_path / "inventory.yaml"
    path.write_text("\n".join([*lines, "hosts:", "  gpu01: {}", ""]))
    return path


def _pack(tmp_path: Path, nested: list[str]) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text("\n".join(["pack: site", "references:", *[f"  - {item}" for item in nested],
                               "signatures: []", ""]))
    return path


BOMB_MESSAGE = "YAML error: its aliases expand to more than 1,000,000 values (an alias bomb?): refused"


def test_alias_bomb_is_refused_the_same_way_by_inventories_and_packs(tmp_path: Path) -> None:
    # Before this reader, `gpudiag inventory` walked the bomb (minutes) while `sweep` stopped at the unknown key,
    # and a pack's references were expanded by both.
    # The refusal at the limit (the line named below) is what bounds the work; bench/hostile_inputs.py times it.
    with pytest.raises(InventoryError) as inventory_error:
        load_inventory(_inventory(tmp_path, BOMB))
    with pytest.raises(PackError) as pack_error:
        load_pack(_pack(tmp_path, BOMB))
    # Level 6 (2.4 million values) is the first past the limit: its line is named.
    assert str(inventory_error.value) == f"{tmp_path / 'inventory.yaml'}:11: {BOMB_MESSAGE}"
    assert str(pack_error.value) == f"{tmp_path / 'site.yaml'}:9: {BOMB_MESSAGE}"


def test_aliases_below_the_limit_are_read() -> None:
    text = "\n".join(f"- {item}" for item in BOMB[:6])  # level 5: 300,000 values, under the limit
    data = yaml_file.load("ok.yaml", text)
    assert isinstance(data, list) and len(data[5]) == 8 and data[5][0] is data[4]


def test_value_that_contains_itself_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match=r"inventory.yaml:5: YAML error: an alias inside its own anchor"):
        load_inventory(_inventory(tmp_path, ["&loop [a, *loop]"]))
    with pytest.raises(PackError, match=r"site.yaml:3: YAML error: an alias inside its own anchor"):
        load_pack(_pack(tmp_path, ["&loop [a, *loop]"]))


@pytest.mark.parametrize("depth", [70, 600])  # past the limit; past Python's recursion limit in PyYAML
def test_deep_nesting_is_refused(tmp_path: Path, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    with pytest.raises(InventoryError, match=r"inventory.yaml(:\d+)?: YAML error: nested deeper than 64 levels"):
        load_inventory(_inventory(tmp_path, [nested]))
    with pytest.raises(PackError, match=r"site.yaml(:\d+)?: YAML error: nested deeper than 64 levels"):
        load_pack(_pack(tmp_path, [nested]))


def test_huge_file_is_not_read(tmp_path: Path) -> None:
    padding = "#" * 1023 + "\n"
    path = tmp_path / "inventory.yaml"
    path.write_text("hosts: {gpu01: {}}\n" + padding * 4096)  # just over 4 MiB
    with pytest.raises(InventoryError) as excinfo:
        load_inventory(path)
    assert str(excinfo.value) == f"{path}: the inventory is larger than 4 MiB: not read"
    pack = tmp_path / "site.yaml"
    pack.write_text("pack: site\n" + padding * 4096)
    with pytest.raises(PackError, match=r"site.yaml: the pack is larger than 4 MiB: not read"):
        load_pack(pack)


def test_syntax_errors_read_the_same_in_both(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("hosts:\n  gpu01: {user: [a}\n")
    pack = tmp_path / "site.yaml"
    pack.write_text("pack: site\nsignatures: [a}\n")
    with pytest.raises(InventoryError) as inventory_error:
        load_inventory(inventory)
    with pytest.raises(PackError) as pack_error:
        load_pack(pack)
    assert str(inventory_error.value) == (f"{inventory}:2: YAML syntax error: expected ',' or ']', but got '}}' "
                                          "(while parsing a flow sequence)")
    assert str(pack_error.value) == (f"{pack}:2: YAML syntax error: expected ',' or ']', but got '}}' "
                                     "(while parsing a flow sequence)")


def test_ansible_inventories_go_through_the_same_reader(tmp_path: Path) -> None:
    # An Ansible YAML inventory and its host_vars files are composed by yaml_file too: the bomb is refused with
    # the same line, before the Ansible reader walks it.
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("all:\n  hosts:\n    gpu01:\n  vars:\n    bomb:\n" + "".join(f"      - {b}\n" for b in BOMB))
    with pytest.raises(InventoryError) as excinfo:
        load_inventory(hosts)
    assert str(excinfo.value) == f"{hosts}:12: {BOMB_MESSAGE}"
    hosts.write_text("all:\n  hosts:\n    gpu01:\n")
    (tmp_path / "host_vars").mkdir()
    host_vars = tmp_path / "host_vars" / "gpu01.yml"
    host_vars.write_text("bomb:\n" + "".join(f"  - {b}\n" for b in BOMB))
    with pytest.raises(InventoryError) as excinfo:
        load_inventory(hosts)
    assert str(excinfo.value) == f"{host_vars}:8: {BOMB_MESSAGE}"


def test_ansible_tags_only_where_asked() -> None:
    text = "user: !unsafe 'ops{{x}}'\nkey: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162\n"
    document = yaml_file.compose("hosts.yml", text, ansible_tags=True)
    try:
        assert isinstance(document.root, yaml_file.MappingNode)
        (_, user), (_, key) = document.root.value
        assert document.construct(user) == "ops{{x}}"
        with pytest.raises(yaml_file.YamlFileError) as excinfo:
            document.construct(key)
        assert str(excinfo.value) == "hosts.yml:2: an Ansible Vault value (!vault): gpudiag cannot decrypt it"
    finally:
        document.close()
    unknown = r"^g.yaml:1: .*could not determine a constructor for the tag '!unsafe'$"
    with pytest.raises(yaml_file.YamlFileError, match=unknown):
        yaml_file.load("g.yaml", "user: !unsafe ops\n")  # gpudiag's own files know no Ansible tag
    plain = yaml_file.compose("hosts.yml", text)
    assert isinstance(plain.root, yaml_file.MappingNode)
    assert plain.with_ansible_tags().construct(plain.root.value[0][1]) == "ops{{x}}"
