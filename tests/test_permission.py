"""The digital-silence detector behind the macOS denied-microphone hint."""

from __future__ import annotations

import numpy as np
import pytest

from app.audio.permission import PRIVACY_PATH, ZERO_WINDOW_S, DigitalSilence, silence_message

RATE = 48_000


def blocks(total_s: float, block: int, channels: int = 1,
           dtype: type[np.generic] = np.float32) -> list[np.ndarray]:
    n = int(total_s * RATE)
    return [np.zeros((min(block, n - i), channels), dtype=dtype) for i in range(0, n, block)]


@pytest.mark.parametrize("block", [128, 441, 512, 4800, 48_000])
@pytest.mark.parametrize(("channels", "dtype"), [(1, np.float32), (2, np.float32), (1, np.int16)])
def test_says_once_on_the_block_that_completes_the_window(block: int, channels: int,
                                                          dtype: type[np.generic]) -> None:
    detector = DigitalSilence(RATE)
    fed = 0
    said_at: list[int] = []
    for b in blocks(ZERO_WINDOW_S * 2, block, channels, dtype):
        fed += len(b)
        if detector.feed(b):
            said_at.append(fed)
    assert len(said_at) == 1
    needed = int(ZERO_WINDOW_S * RATE)
    assert needed <= said_at[0] < needed + block  # not before 3 s of samples, nor a block late
    assert detector.settled


def test_one_least_significant_bit_anywhere_in_the_window_is_a_signal() -> None:
    """A quiet room is not digital silence: its analog noise sets a bit now and then."""
    for where_s in (0.0, 1.5, ZERO_WINDOW_S - 0.01):
        detector = DigitalSilence(RATE)
        said = False
        for i, b in enumerate(blocks(ZERO_WINDOW_S * 2, 480)):
            if i == int(where_s * RATE / 480):
                b[7, 0] = 1 / 32768
            said = detector.feed(b) or said
        assert not said
        assert detector.settled


def test_zeros_after_a_signal_are_a_pause_not_a_denied_microphone() -> None:
    detector = DigitalSilence(RATE)
    assert not detector.feed(np.full((480, 1), 0.01, dtype=np.float32))
    assert not any(detector.feed(b) for b in blocks(ZERO_WINDOW_S * 3, 480))


def test_short_stream_says_nothing() -> None:
    detector = DigitalSilence(RATE)
    assert not any(detector.feed(b) for b in blocks(ZERO_WINDOW_S - 0.1, 480))
    assert not detector.settled


def test_only_macos_names_the_permission_and_where_to_grant_it() -> None:
    mac = silence_message("MacBook Pro Microphone", platform="darwin")
    assert "MacBook Pro Microphone" in mac and "permission to use the microphone" in mac
    assert PRIVACY_PATH in mac
    assert PRIVACY_PATH == "System Settings → Privacy & Security → Microphone"
    for other in ("win32", "linux"):
        text = silence_message("Headset", platform=other)
        assert "digital silence" in text and "Headset" in text
        assert "permission" not in text and "Privacy" not in text


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        DigitalSilence(0)
