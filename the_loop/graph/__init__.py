"""The process graph's state that travels with the branch (``graph/state.py``).

Only the repository file, ``docs/specs/<id>/work-item-state.json``, lives here for
now; the graph engine itself comes in a later issue.
"""

from __future__ import annotations
