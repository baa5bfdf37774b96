"""``python -m the_loop`` runs the command line."""

from __future__ import annotations

from the_loop.cli import main

raise SystemExit(main())
