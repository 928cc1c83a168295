"""gpudiag's controller: inventory, transport, fan-out, checks and reports."""

# The one place the version is declared: pyproject.toml reads it (dynamic = ["version"]), and `gpudiag
# --version` prints it without importing importlib.metadata (about 50 ms of a 0.1 s start-up budget).
__version__ = "0.1.0"
