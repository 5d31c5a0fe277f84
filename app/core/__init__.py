"""What every stage speaks: the typed events, the session clock, the settings, text helpers."""
