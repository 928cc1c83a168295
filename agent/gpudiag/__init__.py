"""gpudiag's controller: inventory, transport, fan-out, checks and reports."""
