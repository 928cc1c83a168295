"""SSH targets are ASCII where ssh reads ASCII (issue 30, fault matrix item 10): Python reads Unicode digits as
numbers (``int("２２７")`` is 227) and resolves a fullwidth address as its ASCII twin, so ``２２７.0.1.5``
reached 227.0.1.5; a zero-width space in a user name was sent as it is. Each is refused before anything
connects, in one line naming the inventory file and line, or the command-line argument, and the character."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudiag.cli.app import app
from gpudiag.sources.inventory import InventoryError, hosts_from_patterns, load_inventory

FULLWIDTH = "２２７.0.1.5"  # U+FF12 U+FF12 U+FF17
ZWSP = "\u200b"
NAMED_2 = "'２' (U+FF12 FULLWIDTH DIGIT TWO)"
NAMED_ZWSP = "'\\u200b' (U+200B ZERO WIDTH SPACE)"


@pytest.mark.parametrize(("key", "value", "named"), [
    ("address", FULLWIDTH, NAMED_2),
    ("user", f"ad{ZWSP}min", NAMED_ZWSP),
    ("jump", f"o{ZWSP}ps@bastion", NAMED_ZWSP),
    ("port", "２２", None),  # a string to YAML: refused as not a port
    ("identity_file", f"~/.ssh/id{ZWSP}_ed25519", NAMED_ZWSP),
    ("known_hosts", f"~/.ssh/known{ZWSP}_hosts", NAMED_ZWSP),
])
def test_the_inventory_names_file_line_and_character(tmp_path: Path, key: str, value: str, named: str | None) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(textwrap.dedent(f"""\
        hosts:
          gpu01:
            {key}: "{value}"
        """), encoding="utf-8")
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    message = str(info.value)
    assert message.startswith(f"{path}:3: hosts.gpu01.{key}: ") and "\n" not in message
    if named is not None:
        assert named in message


def test_a_path_may_hold_other_letters(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text('hosts:\n  gpu01:\n    identity_file: "~/clés/id_ed25519"\n', encoding="utf-8")
    assert load_inventory(path).hosts[0].identity_file == "~/clés/id_ed25519"


@pytest.mark.parametrize(("word", "named"), [
    (FULLWIDTH, NAMED_2), ("gpu01:２２", NAMED_2), (f"u{ZWSP}ser@gpu01", NAMED_ZWSP), ("[::１]", "U+FF11"),
    ("ops@[::1]:２２", NAMED_2), (f"gpu{ZWSP}01", NAMED_ZWSP),
])
def test_command_line_targets(word: str, named: str) -> None:
    with pytest.raises(InventoryError) as info:
        hosts_from_patterns((word,))
    assert named in str(info.value) and repr(word) in str(info.value)


def test_a_host_file_names_its_line(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"gpu01\n{FULLWIDTH}\n", encoding="utf-8")
    with pytest.raises(InventoryError, match=rf"^{hosts}:2: .*U\+FF12"):
        hosts_from_patterns((f"^{hosts}",))


def test_an_ansible_inventory_names_file_line_and_character(tmp_path: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text(f"[gpu]\ngpu01 ansible_host=10.0.0.1\n{FULLWIDTH}\ngpu02 ansible_user=ad{ZWSP}min\n",
                    encoding="utf-8")
    with pytest.raises(InventoryError, match=rf"^{path}:3: bad host name .*U\+FF12"):
        load_inventory(path)
    path.write_text(f"[gpu]\ngpu02 ansible_user=ad{ZWSP}min\n", encoding="utf-8")
    with pytest.raises(InventoryError, match=rf"^{path}:2: ansible_user: .*U\+200B"):
        load_inventory(path)
    path.write_text("[gpu]\ngpu02 ansible_port=２２\n", encoding="utf-8")
    with pytest.raises(InventoryError, match=rf"^{path}:2: ansible_port: "):
        load_inventory(path)


@pytest.mark.parametrize(("args", "said"), [
    (["--port", "２２"], "Invalid value for '--port'"),
    (["-u", f"ad{ZWSP}min"], f"gpudiag: user 'ad\\u200bmin' holds {NAMED_ZWSP}"),
    (["-J", f"o{ZWSP}ps@bastion"], f"gpudiag: -J 'o\\u200bps@bastion': holds {NAMED_ZWSP}"),
    (["--identity-file", f"id{ZWSP}x"], f"gpudiag: --identity-file 'id\\u200bx': holds {NAMED_ZWSP}"),
])
def test_command_line_options_are_refused_before_any_connection(args: list[str], said: str) -> None:
    # 192.0.2.1 (TEST-NET-1) is never reached: the refusal comes first.
    done = CliRunner().invoke(app, ["sweep", "192.0.2.1", "--connect-timeout", "0.1", *args], prog_name="gpudiag")
    assert done.exit_code in (2, 3) and said in done.stderr, done.stderr
    assert done.stdout == ""


def test_a_config_file_port_is_still_a_number(tmp_path: Path) -> None:
    from gpudiag.cli.params import ascii_port

    assert ascii_port(22) == 22 and ascii_port("2222") == 2222
