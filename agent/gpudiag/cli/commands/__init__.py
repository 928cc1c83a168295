"""The gpudiag commands, one module each (or one close family: :mod:`.logs` holds ``signatures`` and ``grep``).
Each takes its option groups from :data:`gpudiag.cli.options.TAKES`; :mod:`gpudiag.cli.app` registers them."""
