"""The CLI config: the file and its accessors (``file``), every key's default
(``defaults``), bounded YAML (``yaml``), the schema validator (``schema``), and which
state root an invocation uses (``state_root``)."""
