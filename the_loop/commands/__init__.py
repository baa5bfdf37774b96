"""Command modules: each exposes ``add_parser(subparsers)`` and thin handlers."""
