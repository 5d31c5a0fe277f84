"""The room's noise floor, so a pause is found over a fan, a hum or a codec's hiss.

webrtcvad calls steady noise (pink noise at -42 dBFS, a laptop fan) speech, and a gate
relative to the utterance's loudest frame never fires while that noise goes on.  This
tracks the floor by *minimum statistics* (Martin 2001): the quietest 30 ms frame of the
last few seconds.  Speech has gaps between words and syllables where the level drops to
the room's, so the minimum follows the room, not the voice, with no circular "was this
frame speech?" decision; it also rises within ``window_s`` when a fan starts.

A frame is loud enough to be speech when it is ``margin_db`` above that floor: 30 ms
frames of steady noise stay just under 12 dB above their 3-second minimum, so 12 dB
keeps noise out while speech, well above a room's tone, stays in (figures: decision 0004).

Design notes: decision 0038.
"""

from __future__ import annotations

import collections

from app.audio.frames import FRAME_MS
from app.audio.level import SILENCE_DBFS as SILENT_DB

NO_SIGNAL_DB = -90.0
MIN_SIGNAL_FRAMES = 10


class NoiseFloor:
    def __init__(self, window_s: float = 3.0, margin_db: float = 12.0) -> None:
        self._window_s = window_s
        self._levels: collections.deque[tuple[float, float]] = collections.deque(
            maxlen=max(1, round(window_s * 1000 / FRAME_MS)))
        """(audio time, level) of the window's frames that had a signal."""
        self._heard = 0
        """Frames with a signal since the last one without (or the start)."""
        self.margin_db = margin_db

    @property
    def floor_db(self) -> float:
        """Quietest frame level of the window (dBFS); -120 while there is no floor."""
        if self._heard < MIN_SIGNAL_FRAMES:
            return SILENT_DB
        return min(level for _, level in self._levels)

    def update(self, level_db: float, t: float) -> None:
        """The frame ending at audio time ``t`` had ``level_db``."""
        while self._levels and self._levels[0][0] <= t - self._window_s:
            self._levels.popleft()
        if level_db > NO_SIGNAL_DB:
            self._levels.append((t, level_db))
            self._heard += 1
        else:
            self._heard = 0

    def above(self, level_db: float) -> bool:
        """Is a frame at ``level_db`` loud enough over the room to be speech?"""
        return level_db >= self.floor_db + self.margin_db
