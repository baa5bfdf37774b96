"""The intake: what GitHub said, as plain values named after GitHub's events, and
everything that follows (decision 016).

Each module has one job: the values and their translation from GitHub's JSON
(``events``), the keyword grammar (``keywords``), who may command (``people``), one
comment's fate (``comments``), a thread met for the first time (``first_sight``), the
text an agent receives (``delivery``), the delivery ledger's state machine and breaker
(``ledger``), delivering into a pane (``drain``), the watched set and closure decisions
(``watched``), applying them (``closures``), a pull request's CI and the paste of a
failed check (``ci``) and what a round does with it (``ci_round``), which work item a
ref reaches (``routing``), the first prompt (``prompt``), what the intake is given (``ports``), and
the :class:`~the_loop.intake.intake.Intake` a reader feeds (``intake``). Nothing is
imported here.
"""
