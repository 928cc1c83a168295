"""``gpudiag inventory``'s table never breaks a host name, an address or a path in two (issue 30 item 8:
rich folded ``very-long-hostname-rack-a-node001`` into ``very-long-hostn`` / ``ame-rack-a-node001``): a cell
wraps only between words, a host range after a comma, and a column that cannot hold its longest word is left
out, and said."""

from __future__ import annotations

import pytest

from gpudiag.model import Host
from gpudiag.report.inventory_table import render_inventory
from gpudiag.sources.inventory import describe

LOG = "/var/log/inference/sglang-server-glm5.log"
KEY = "~/.ssh/cluster-rack-a-ed25519"


def _rows(fold_apart: bool) -> list[dict[str, object]]:
    hosts = [Host(name=f"very-long-hostname-in-rack-a-node{i:03d}", address=f"10.200.{i}.17",
                  user="gpuops", port=2222 if fold_apart and i % 2 else None, identity_file=KEY,
                  groups=("rack-a", "inference-pool"), logs=(LOG, "@kernel")) for i in range(1, 7)]
    hosts.append(Host(name="spare-node-b", logs=(LOG,)))
    return describe(hosts)


@pytest.mark.parametrize("width", [40, 60, 80, 120])
@pytest.mark.parametrize("fold", [True, False])
def test_no_word_is_split(width: int, fold: bool) -> None:
    rows = _rows(fold_apart=True)
    text = render_inventory(rows, width=width, fold=fold)
    words = {word for line in text.splitlines() for word in line.replace(",", " ").split()}

    for row in rows:  # a name shows whole, or inside a whole range (gpu[001-006] at most folded)
        assert row["name"] in words or any(w.startswith("very-long-hostname-in-rack-a-node[") for w in words), text
    for word in (LOG, KEY, "10.200.1.17", "inference-pool"):
        assert word in words or word not in text.replace("\n", "").replace(" ", ""), (word, text)
    if not fold:
        assert sum(line.startswith("very-long-hostname-in-rack-a-node0") for line in text.splitlines()) == 6


def test_a_column_too_narrow_for_its_longest_path_is_left_out_and_said() -> None:
    text = render_inventory(_rows(fold_apart=False), width=60, fold=False)

    assert LOG not in text and "(not shown at 60 columns: " in text and "logs" in text.splitlines()[-2]
    assert text.splitlines()[-1] == "7 hosts"


def test_a_long_range_breaks_after_a_comma_outside_its_brackets() -> None:
    names = [f"gpu{i:02d}" for i in (1, 2, 3, 5, 7, 8, 11)] + ["cpu1", "cpu3"]
    text = render_inventory(describe([Host(name=n, user="u") for n in names] + [Host(name="x", user="v")]),
                            width=24)

    assert [line.split()[0] for line in text.splitlines()[2:4]] == ["cpu[1,3],", "gpu[01-03,05,07-08,11]"]
