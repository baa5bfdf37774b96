"""The operator store (``portable/``): the record store, its format and index, and the
section stores (control, poll, channels). Import the modules; nothing loads here."""

from __future__ import annotations
