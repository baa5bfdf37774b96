"""Shared test helpers: the one test world (``world``), real git remotes (``gitrepo``),
private tmux sockets (``tmuxsock``) and the package import reader (``imports``)."""
