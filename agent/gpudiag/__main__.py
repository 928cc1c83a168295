"""``python -m gpudiag``: the same command line as ``gpudiag``."""

from gpudiag.cli.entry import main

if __name__ == "__main__":
    main()
