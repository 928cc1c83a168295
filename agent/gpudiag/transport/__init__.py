"""How a command reaches a node. :mod:`.base` holds the :class:`Transport` protocol (one ``run`` method) and the
error tree every transport raises; :mod:`.ssh` is asyncssh's client (the only one in the controller),
:mod:`.local` runs on this machine; :mod:`.pacing` bounds handshakes, :mod:`.limits` open files; and
:mod:`.build` is the one place that builds the transport a sweep uses."""
