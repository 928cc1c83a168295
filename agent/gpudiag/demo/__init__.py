"""A simulated GPU cluster: the fake nvidia-smi, its scenarios, and the demo SSH servers."""
