"""``python -m gpudiag``: the same command line as ``gpudiag``."""

import sys

try:
    from gpudiag.cli.entry import main
except KeyboardInterrupt:
    # A Ctrl-C while the first of gpudiag's modules are still being imported: one line and exit 130, as a
    # Ctrl-C later ends the run (gpudiag.cli.entry guards the rest of the imports the same way).
    sys.stderr.write("gpudiag: interrupted\n")
    sys.exit(130)

if __name__ == "__main__":
    main()
