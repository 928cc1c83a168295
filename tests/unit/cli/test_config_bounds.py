"""``--config`` (and ``$GPUDIAG_CONFIG``) read within bounds (issue 30, fault matrix #5): a FIFO hung the run,
``/dev/zero`` grew to 6.5 GB, deep nesting, bad UTF-8 and ``inf`` were tracebacks, a byte-order mark a syntax
error. Each is now one line naming the file, exit 3; a BOM is read past."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_config_file import invoke


def refused(tmp_path: Path, path: Path, why: str, **env: str) -> None:
    done = invoke(tmp_path, "signatures", *(() if env else ("--config", str(path))), **env)
    assert (done.exit_code, done.stdout) == (3, ""), done.output  # type: ignore[attr-defined]
    assert done.stderr == f"gpudiag: {why}\n", done.stderr  # type: ignore[attr-defined]


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    refused(tmp_path, fifo, f"{fifo}: not a regular file, not a config file")
    refused(tmp_path, fifo, f"{fifo}: not a regular file, not a config file",
            GPUDIAG_CONFIG=str(fifo))


def test_a_folder_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    refused(tmp_path, tmp_path, f"{tmp_path}: a folder, not a config file")  # was "[Errno 21] Is a directory: 3"


def test_a_device_is_refused() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as home:
        refused(Path(home), Path("/dev/zero"), "/dev/zero: not a regular file, not a config file")


def test_a_huge_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    with open(path, "wb") as out:
        out.write(b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    refused(tmp_path, path, f"{path}: larger than 1 MiB; not a config file")


def test_deep_nesting_bad_utf8_and_inf(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    refused(tmp_path, deep, f"{deep}: nested too deeply to be a config file")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[sweep]\nuser = "j\xe9r\xf4me"\n')
    refused(tmp_path, latin, f"{latin}: not UTF-8 text (byte 17); save it as UTF-8")
    for value in ("inf", "nan", "-inf"):
        bad = tmp_path / f"{value}.toml"
        bad.write_text(f"[sweep]\ntimeout = {value}\n")
        refused(tmp_path, bad, f"{bad}:2: [sweep] timeout: expected a finite number, not {float(value)!r}")


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b""])
def test_a_byte_order_mark_is_read_past(tmp_path: Path, bom: bytes) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(bom + b'[defaults]\nconnect-rate = "50/s"\n')
    done = invoke(tmp_path, "signatures", "--config", str(path))
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]


def test_an_unknown_key_lists_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text('[sweep]\nonly_chagnes = true\n')
    done = invoke(tmp_path, "signatures", "--config", str(path))
    line = done.stderr  # type: ignore[attr-defined]
    assert line.startswith(f"gpudiag: {path}:2: [sweep] only_chagnes: unknown key; did you mean only-changes?; "
                           "known: ") and line.count("\n") == 1
    assert "prom-file" in line and "keep-days" in line and "prom_file" not in line
