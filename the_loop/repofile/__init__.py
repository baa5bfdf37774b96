"""The repository file: the work-item state file committed in a checkout, where it
lives and its locked reads and writes (``file``), and its values (``values``)."""
