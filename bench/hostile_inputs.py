"""Wall and CPU seconds the controller spends refusing hostile input: the node documents and the YAML alias bomb
of tests/unit/collect/test_untrusted_probe.py and tests/unit/sources/test_yaml_file.py. The tests assert what
bounds the work (rows, lines, bytes read, the refusal at the limit); this prints what it costs, as numbers.

    python3 bench/hostile_inputs.py            # each case 3 times, the least of each printed
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpudiag.collect.parse import parse_probe, parse_probe_output
from gpudiag.sources.inventory import InventoryError, load_inventory

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SMI_DOC = json.loads((DATA / "h200_580.159_idle" / "probe.json").read_text())


def _smi(stdout: str) -> dict[str, Any]:
    doc = copy.deepcopy(SMI_DOC)
    doc["fields"] = [["index", "index"], ["name", "name"]]
    doc["samples"] = [{"t_s": 0.0, "exit": 0, "stdout": stdout, "stderr": ""}]
    return doc


def _rows() -> None:
    parse_probe_output(json.dumps(_smi("".join(f"{i}, G\n" for i in range(300_000)))).encode())


def _lost_lines() -> None:
    parse_probe(_smi("".join(f"Unable to determine the device handle for GPU{i:08x}:00:00.0: Unknown Error\n"
                             for i in range(100_000)) + "".join(f"message {i}\n" for i in range(100_000))))


def _logs() -> None:
    line = {"seq": 1, "text": "x" * 1_000_000}
    match = {"count": 5, "older": 0, "first": line, "last": line, "recent": [line] * 10_000,
             "values": {f"k{i}": "v" * 10_000 for i in range(10_000)}}
    source = {"path": "p" * 100_000, "status": "ok", "files": ["f"] * 100_000, "notes": ["n"] * 100_000,
              "matches": {f"s{i}": match for i in range(2_000)}}
    doc = copy.deepcopy(SMI_DOC)
    doc["logs"] = [source] * 100
    parse_probe(doc)


def _alias_bomb() -> None:
    bomb = ["&l0 [x, x, x, x, x, x, x, x]"] + [f"&l{i} [{', '.join([f'*l{i - 1}'] * 8)}]" for i in range(1, 8)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "inventory.yaml"
        lines = ["defaults:", "  logs:", "    - path: /var/log/x.log", "      extra:"]
        lines += [f"        - {b}" for b in bomb]
        path.write_text("\n".join([*lines, "hosts:", "  gpu01: {}", ""]))
        try:
            load_inventory(path)
        except InventoryError:
            return
        raise AssertionError("the alias bomb was not refused")


CASES: dict[str, Callable[[], None]] = {
    "300,000 GPU rows (4 MB)": _rows,
    "100,000 lost-GPU lines and 100,000 messages": _lost_lines,
    "100 log sources of 2,000 signatures": _logs,
    "YAML alias bomb (inventory)": _alias_bomb,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'case':<48} {'wall s':>8} {'CPU s':>8}")
    for name, case in CASES.items():
        walls, cpus = [], []
        for _ in range(args.runs):
            wall, cpu = time.perf_counter(), time.process_time()
            case()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        print(f"{name:<48} {min(walls):>8.2f} {min(cpus):>8.2f}")


if __name__ == "__main__":
    main()
