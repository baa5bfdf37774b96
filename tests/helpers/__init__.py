"""Shared test helpers: real git remotes (``gitrepo``) and private tmux sockets (``tmuxsock``)."""
