"""Is the recogniser's last word one the speaker said?  A cue from its probability and span.

At a pause a small recogniser finishes the speaker's sentence for them: an unfinished
"Explain the…" comes back "Explain them.", "Tell me about…" as "Tell me about it."  Its
own doubt shows it (a low probability for the word), or its alignment does (the word
begins as the voice stops: it lies in the silence).  Either makes the text's end unsure,
and the end-of-turn policy waits instead of calling it finished.  Numbers and their
measurement: decision 0055.
"""

from __future__ import annotations

from app.core.events import LastWord

UNSURE_PROBABILITY = 0.5
"""Below a half the recogniser itself puts the odds against its last word: more likely
another word, or none, was said there."""
MIN_SAID_S = 0.06
"""The least of a said word that lies inside the voice: a reduced syllable lasts about
60 ms (three of the alignment's 20 ms steps); a last word with less of itself before the
voice stopped was aligned to the silence, so it was not said."""


def unsure_end(word: LastWord | None, voiced_end: float) -> bool:
    """Is ``word`` (a pass's last word, audio times) unsure, the voice having stopped at
    ``voiced_end``?  No word read (a pass that was not asked, or no words): no cue."""
    if word is None:
        return False
    return word.probability < UNSURE_PROBABILITY or voiced_end - word.start < MIN_SAID_S
