"""Stored JSON, whatever store holds it: a directory of per-work-item records
(``directory``), JSON values as trees without recursion (``tree``), and documents of
one row per line (``rows``)."""
