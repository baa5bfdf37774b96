"""The poller's domain: pure decisions over GitHub's answers, with no I/O.

Each module has one job: the keyword grammar (``keywords``), who may command
(``people``), a comment as a value (``github_comment``), one comment's fate
(``comments``), the text an agent receives (``delivery``), the delivery ledger's
state machine and breaker (``ledger``), and the watched set and closures
(``watched``). Collaborators and settings come in as typed values.
"""
