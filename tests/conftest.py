"""Shared by every test folder: pytest puts this folder on ``sys.path`` (rootdir-relative ``prepend`` import
mode), so the harness modules beside it - ``loopback`` (a real sshd playing a cluster) and ``make_base`` (the
capture tool) - import as top-level modules. They are test tools, not part of the shipped package."""
