"""Watching a session: the timeline, traces, the event log, session files, percentiles."""
