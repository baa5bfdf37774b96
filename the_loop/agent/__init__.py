"""What each live session's agent is doing: its hooks, its screens, its state."""
