"""Shared by every test folder: pytest puts this folder on ``sys.path`` (rootdir-relative ``prepend`` import
mode), so the harness modules beside it - ``loopback`` (a real sshd playing a cluster) and ``make_base`` (the
capture tool) - import as top-level modules. They are test tools, not part of the shipped package."""

import signal

# A suite started in the background (`nohup ... &`, some cron and CI wrappers) inherits SIGINT ignored, and an
# ignored signal stays ignored across exec: every gpudiag the tests start would then keep Ctrl-C ignored (as it
# must for a user's background job), and the tests that send it SIGINT would wait for an exit that never comes.
# A handler (unlike SIG_IGN) is reset to the default at exec, so the tests' children start as from a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
