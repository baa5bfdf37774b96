"""What an agent has spent: its transcripts metered and priced with a shipped table."""
