"""Running a command on the node, for every node-side module (``gpudiag_proc`` in the bundle): bounded output,
a timeout, failures as exit codes. Standard library only, Python 3.6+."""

import os
import subprocess

MAX_TEXT = 64 * 1024  # bound every captured stream: a runaway tool must not flood the channel


def run(argv, timeout_s, limit=MAX_TEXT, raw_stdout=False):
    """Run argv with LC_ALL=C and no stdin; (exit code, stdout, stderr) as text cut to ``limit`` bytes
    (``raw_stdout``: stdout as the bytes it printed, whole: the log scan keeps only its tail itself).
    Exit 127 when it cannot be found, 126 when it cannot start, 124 when it outlived ``timeout_s``."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout_s, env=dict(os.environ, LC_ALL="C"))
    except FileNotFoundError as exc:
        return 127, b"" if raw_stdout else "", str(exc)
    except subprocess.TimeoutExpired:
        return 124, b"" if raw_stdout else "", "timed out after %.0f s" % timeout_s
    except OSError as exc:
        return 126, b"" if raw_stdout else "", str(exc)
    out = done.stdout if raw_stdout else done.stdout[:limit].decode("utf-8", "replace")
    return done.returncode, out, done.stderr[:limit].decode("utf-8", "replace")


def find_tool(name, extra_dirs=()):
    """``name`` on PATH, else in ``extra_dirs`` (shutil.which without importing shutil), or None."""
    folders = [f for f in os.environ.get("PATH", os.defpath).split(os.pathsep) if f]
    for folder in folders + list(extra_dirs):
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None
