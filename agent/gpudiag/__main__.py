"""``python -m gpudiag``: the same command line as ``gpudiag``."""

from gpudiag.cli.app import main

main()
