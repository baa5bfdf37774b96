"""The spec lane: its fixed phases and their transitions (``lane``), where each phase's
artifact lives and what it must hold (``artifacts``), and which work item a checkout is
(``checkouts``)."""
