"""Interview Copilot: live captions of the interviewer's question and a streamed answer."""

__version__ = "0.1.0"
