"""How finished the voice sounds: pipecat's Smart Turn v3.2, an optional second opinion.

Smart Turn is a Whisper-tiny encoder with a linear head (~8 MB ONNX, 23 languages,
BSD-2-Clause) that reads the last 8 s of audio at a pause and returns P(the turn is
over).  It is trained on human prosody: on espeak voices it does not tell finished from
cut questions, so the policy gives it a small weight, and it is off by default.

The weights come from the ``pipecat-ai`` wheel (the ``smart-turn`` extra, which the
installers include), located through its package metadata (``importlib.metadata``)
*without importing pipecat* (which pulls in a framework); only the .onnx is needed, run
with onnxruntime (installed with faster-whisper).  The input
features are Whisper's log-mel spectrogram computed here with numpy (no torch), the same
recipe as the model's training (transformers' WhisperFeatureExtractor, 8 s chunk).
"""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from app.audio.frames import SAMPLE_RATE
from app.platform.pinned import SMART_TURN_ONNX, IntegrityError, verify_file

WHEEL = "pipecat-ai"
EXTRA = "smart-turn"
"""The optional dependency group that installs :data:`WHEEL` (pyproject.toml)."""
MODEL_FILE = SMART_TURN_ONNX.name
WINDOW_S = 8
TAIL_S = 0.2
"""Silence after the last word when Smart Turn reads the audio: pipecat runs it once its
VAD has heard 0.2 s of silence (``stop_secs``), the pause it was trained to judge."""
_N_FFT, _HOP, _N_MELS = 400, 160, 80


class SoundUnavailable(RuntimeError):
    """The pipecat-ai wheel, its model or onnxruntime is missing or did not load."""


def find_model() -> Path | None:
    """The Smart Turn ONNX inside the installed ``pipecat-ai`` wheel (or None)."""
    try:
        files = metadata.files(WHEEL) or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == MODEL_FILE:
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    return None


class SmartTurn:
    """P(end of turn | the last 8 s of audio).  One call at a time (its CPU: ``bench signals``)."""

    def __init__(self, model_path: Path | None = None, threads: int = 1) -> None:
        path = model_path or find_model()
        if path is None:
            raise SoundUnavailable(f"Smart Turn needs the {WHEEL} package ({MODEL_FILE}): "
                                   f"pip install 'interview-copilot[{EXTRA}]'")
        if model_path is None:  # the shipped file: the one its weight in the policy was chosen on
            try:
                verify_file(path, SMART_TURN_ONNX)
            except IntegrityError as exc:
                raise SoundUnavailable(f"Smart Turn was not loaded: {exc}") from exc
        try:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            self._session: Any = ort.InferenceSession(str(path), sess_options=options,
                                                      providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise SoundUnavailable(f"Smart Turn did not load: {exc}") from exc

    def p_end(self, samples: npt.NDArray[np.int16]) -> float:
        """Probability that the turn is over, given the utterance's audio (16 kHz int16)."""
        features = log_mel(last_window(samples))[np.newaxis]
        logits = self._session.run(None, {"input_features": features})[0]
        return float(np.asarray(logits).reshape(-1)[0])  # the model's output is already a sigmoid


def last_window(samples: npt.NDArray[np.int16]) -> npt.NDArray[np.float32]:
    """The last 8 s as float in [-1, 1], zero-padded at the front when shorter."""
    n = WINDOW_S * SAMPLE_RATE
    audio: npt.NDArray[np.float32] = samples[-n:].astype(np.float32) / np.float32(32768.0)
    return np.pad(audio, (n - len(audio), 0)) if len(audio) < n else audio


def log_mel(audio: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Whisper's normalised log-mel features (80 × 800 for 8 s), as the model was trained."""
    x = audio.astype(np.float64)
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    padded = np.pad(x, (_N_FFT // 2, _N_FFT // 2), mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, _N_FFT)[::_HOP]
    power = np.abs(np.fft.rfft(frames * _hann(), axis=-1)) ** 2
    mel = np.maximum(1e-10, power @ _mel_filters())
    spec = np.log10(mel).T[:, :-1]
    spec = np.maximum(spec, spec.max() - 8.0)
    out: npt.NDArray[np.float32] = ((spec + 4.0) / 4.0).astype(np.float32)
    return out


@functools.cache
def _hann() -> npt.NDArray[np.float64]:
    return np.hanning(_N_FFT + 1)[:-1]  # periodic, as torch.hann_window


@functools.cache
def _mel_filters() -> npt.NDArray[np.float64]:
    """Slaney-scale, Slaney-normalised triangular filters, (n_fft/2+1) × 80, as librosa's."""
    def to_mel(f: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        linear = 3.0 * f / 200.0
        log = 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) * 27.0 / np.log(6.4)
        return np.where(f >= 1000.0, log, linear)

    def to_hz(m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        linear = 200.0 * m / 3.0
        log = 1000.0 * np.exp(np.log(6.4) / 27.0 * (m - 15.0))
        return np.where(m >= 15.0, log, linear)

    edges = to_hz(np.linspace(0.0, float(to_mel(np.array([SAMPLE_RATE / 2.0]))[0]), _N_MELS + 2))
    bins = np.linspace(0, SAMPLE_RATE // 2, _N_FFT // 2 + 1)
    slopes = edges[np.newaxis, :] - bins[:, np.newaxis]
    widths = np.diff(edges)
    down = -slopes[:, :-2] / widths[:-1]
    up = slopes[:, 2:] / widths[1:]
    filters = np.maximum(0.0, np.minimum(down, up))
    return filters * (2.0 / (edges[2:] - edges[:-2]))[np.newaxis, :]
