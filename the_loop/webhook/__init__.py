"""The webhook receiver: GitHub pushes, and what it pushed is kept until it is processed.

``settings`` says where it listens and with which secret; ``wire`` reads one request's
head; ``rules`` decides what a request gets, in the order of ``docs/cli/commands/webhook.md``;
``inbox`` keeps each accepted delivery durably, keyed by its delivery id, until processed;
``status`` is the receiver's machine-local status file; ``server`` is the receiver itself
(``asyncio``, imported by the ``webhook`` command alone). Decision 019 says why.
"""
