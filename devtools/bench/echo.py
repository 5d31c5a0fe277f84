"""What the echo gate costs: CPU seconds per second of audio, beside webrtcvad's.

The gate runs on both audio threads of every two-voice session, so it must stay a few
percent of a core even on a busy laptop.  The same frames go through webrtcvad (which
every frame already pays for) in the same run, so the ratio holds on any machine.

    python -m devtools.bench.echo --repeats 7
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import webrtcvad

from app.audio.echo import EchoGate
from app.audio.frames import FRAME_SAMPLES, SAMPLE_RATE, AudioFrame
from app.observing.percentile import median, p95
from devtools.bench.synth import speak

QUESTION = "Tell me about a time you had to learn a new technology quickly for a project."


def _frames(x: np.ndarray) -> list[AudioFrame]:
    clipped = np.clip(np.round(x * 32767), -32768, 32767).astype(np.int16)
    return [AudioFrame(k * FRAME_SAMPLES / SAMPLE_RATE, clipped[k * FRAME_SAMPLES:(k + 1) * FRAME_SAMPLES])
            for k in range(len(clipped) // FRAME_SAMPLES)]


def _cpu_per_audio_second(work: Callable[[], None], audio_s: float) -> float:
    start = time.process_time()
    work()
    return (time.process_time() - start) / audio_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.bench.echo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    voice = speak(QUESTION, "espeak:en-us")
    delay = int(0.04 * SAMPLE_RATE)  # the interviewer through the speakers, 40 ms later, -10 dB
    mic = np.concatenate([np.zeros(delay), voice])[: len(voice)] * 10 ** (-10 / 20)
    refs, mics = _frames(voice), _frames(mic)
    audio_s = len(mics) * FRAME_SAMPLES / SAMPLE_RATE

    def gate() -> None:
        echo = EchoGate()
        for ref, cand in zip(refs, mics, strict=True):
            echo.feed_reference(ref)
            echo.is_echo(cand)

    def vad() -> None:
        detector = webrtcvad.Vad(2)
        for ref, cand in zip(refs, mics, strict=True):
            detector.is_speech(ref.samples.tobytes(), SAMPLE_RATE)
            detector.is_speech(cand.samples.tobytes(), SAMPLE_RATE)

    gates, vads = [], []
    for _ in range(args.repeats):  # interleaved, so both see the same machine
        gates.append(_cpu_per_audio_second(gate, audio_s))
        vads.append(_cpu_per_audio_second(vad, audio_s))
    g, v = median(gates) or 0.0, median(vads) or 0.0
    print(f"echo gate: {g * 1000:.1f} ms CPU per second of audio (p95 {(p95(gates) or 0) * 1000:.1f}); "
          f"webrtcvad on the same frames: {v * 1000:.2f} ms (p95 {(p95(vads) or 0) * 1000:.2f}); "
          f"gate/vad {g / v if v else float('nan'):.1f}x over {args.repeats} runs of {audio_s:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
