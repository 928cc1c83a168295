"""``python -m gpudiag``: the same command line as ``gpudiag``."""

from gpudiag.cli.entry import main

main()
