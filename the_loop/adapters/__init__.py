"""The collaborators the intake and its readers are given, over the real things: the
GitHub client (``github_reads``), the dispatcher and tmux (``actions``, ``release``),
who may still write to a repository (``permissions``), the machine-local files the
poller keeps (``cursors``, ``watch_file``, read through ``local_file``), a ticket's facts
(``ticket``), reset's close (``reset_close``), the stores of one run (``stores``), and
the factory that builds them from the config (``poll_factory``).

Adapters import the domain (to implement its ports), never the other way round.
"""
