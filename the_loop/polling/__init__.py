"""The poll reader: asks GitHub what changed and feeds the intake (decision 016).

The cycle (``cycle``) reads each repository's changes with conditional requests: its
kept listing of items (``watch_cache``, brought up to date by ``listing``), then the
comments since its cursor, fed in order to a round of the intake, and the CI of the
watched pull requests' heads (``checks``). Its collaborators come in as typed values
(``reads``, ``ci_ports``).
"""
