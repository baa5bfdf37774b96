"""Everything that touches processes: tmux, git and the agent harnesses.

Modules: :mod:`~the_loop.dispatch.process` (the one subprocess call and
``DispatchError``), :mod:`~the_loop.dispatch.tmux` (``TmuxRunner``),
:mod:`~the_loop.dispatch.workspace` (``Workspace``) and
:mod:`~the_loop.dispatch.harnesses` (``Harness`` and its adapters). Nothing is
imported here, so importing the package stays cheap.
"""

from __future__ import annotations
