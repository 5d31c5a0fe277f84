"""The Core Audio side of the macOS process tap (:mod:`app.audio.process_tap`): the real
:class:`~app.audio.process_tap.TapBackend`, and what both sides share (a block, a refusal).

pyobjc for the Objective-C tap description and the two create calls; ctypes for the HAL's
plain C calls, whose ABI is fixed and which pyobjc's own notes do not vouch for from Python.
Imported on every OS (its types are the tests' too); it loads nothing of macOS until a
:class:`CoreAudioTap` is used.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

Block = npt.NDArray[np.float32]
"""(frames, channels) float32, as the tap's stream carries it."""
BlockHandler = Callable[[Block], None]


def fourcc(code: str) -> int:
    return int.from_bytes(code.encode("ascii"), "big")


NOPE = fourcc("nope")
"""kAudioHardwareIllegalOperationError: what the HAL answers when it refuses (no permission)."""


class TapError(Exception):
    """A step of the tap that Core Audio refused, or that could not run.

    ``status`` is the OSStatus (0 when there is none); ``denied`` says the System Audio
    Recording permission was refused.
    """

    def __init__(self, step: str, status: int = 0, *, denied: bool = False,
                 reason: str = "") -> None:
        self.step = step
        self.status = status
        self.denied = denied or status == NOPE
        self.reason = reason or _status_text(status)
        super().__init__(f"{step}: {self.reason}")


_GLOBAL_SCOPE = fourcc("glob")
_MAIN_ELEMENT = 0
_TAP_FORMAT = fourcc("tfmt")
_NOMINAL_RATE = fourcc("nsrt")
_LINEAR_PCM = fourcc("lpcm")
_FLOAT_FLAG = 1  # kAudioFormatFlagIsFloat
_TCC_DENIED = 1  # TCCAccessPreflight: 0 granted, 1 denied, 2 not asked yet
_CF_UTF8 = 0x08000100


class _PropertyAddress(ctypes.Structure):
    _fields_ = [("mSelector", ctypes.c_uint32), ("mScope", ctypes.c_uint32),
                ("mElement", ctypes.c_uint32)]


class _StreamFormat(ctypes.Structure):
    """AudioStreamBasicDescription (40 bytes)."""

    _fields_ = [("mSampleRate", ctypes.c_double), ("mFormatID", ctypes.c_uint32),
                ("mFormatFlags", ctypes.c_uint32), ("mBytesPerPacket", ctypes.c_uint32),
                ("mFramesPerPacket", ctypes.c_uint32), ("mBytesPerFrame", ctypes.c_uint32),
                ("mChannelsPerFrame", ctypes.c_uint32), ("mBitsPerChannel", ctypes.c_uint32),
                ("mReserved", ctypes.c_uint32)]


class AudioBuffer(ctypes.Structure):
    _fields_ = [("mNumberChannels", ctypes.c_uint32), ("mDataByteSize", ctypes.c_uint32),
                ("mData", ctypes.c_void_p)]


class AudioBufferList(ctypes.Structure):
    """The header and first buffer; ``mNumberBuffers`` of them follow one another."""

    _fields_ = [("mNumberBuffers", ctypes.c_uint32), ("mBuffers", AudioBuffer * 1)]


_IOProc = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_uint32, ctypes.c_void_p,
                           ctypes.POINTER(AudioBufferList), ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p, ctypes.c_void_p)
"""AudioDeviceIOProc: (device, now, input, input time, output, output time, client data)."""


def block_of(buffers: Any) -> Block | None:
    """The float32 samples of an AudioBufferList (a ctypes pointer), copied, as
    (frames, channels): one interleaved buffer, or one buffer per channel side by side."""
    if not buffers:
        return None
    head = buffers.contents
    each = ctypes.cast(ctypes.addressof(head.mBuffers), ctypes.POINTER(AudioBuffer))
    parts: list[Block] = []
    for i in range(int(head.mNumberBuffers)):
        buffer = each[i]
        count = int(buffer.mDataByteSize) // 4
        channels = max(1, int(buffer.mNumberChannels))
        if not buffer.mData or count < channels:
            continue
        samples = np.ctypeslib.as_array(
            ctypes.cast(buffer.mData, ctypes.POINTER(ctypes.c_float)), shape=(count,))
        parts.append(samples[: count - count % channels].reshape(-1, channels).copy())
    if not parts:
        return None
    frames = min(len(part) for part in parts)
    return np.ascontiguousarray(np.hstack([part[:frames] for part in parts]), dtype=np.float32)


class CoreAudioTap:
    """:class:`~app.audio.process_tap.TapBackend` on macOS 14.2+: pyobjc
    (``pyobjc-framework-CoreAudio``) and the CoreAudio framework, both loaded on first use."""

    def __init__(self) -> None:
        self._ca: Any = None
        self._hal: Any = None
        self._tap = 0
        self._tap_uid = ""
        self._format = _StreamFormat()
        self._aggregate = 0
        self._proc_id = ctypes.c_void_p()
        self._proc: Any = None  # the ctypes callback: referenced while Core Audio may call it
        self._running = False

    def create_tap(self) -> None:
        ca = self._load()
        if _audio_capture_denied():
            raise TapError("record system audio", denied=True)
        description = ca.CATapDescription.alloc().initStereoGlobalTapButExcludeProcesses_([])
        description.setName_("Interview Copilot")
        description.setPrivate_(True)
        description.setMuteBehavior_(ca.CATapUnmuted)
        status, tap = ca.AudioHardwareCreateProcessTap(description, None)
        _check(status, "create the process tap")
        self._tap = int(tap)
        self._tap_uid = str(description.UUID().UUIDString())
        self._get(self._tap, _TAP_FORMAT, self._format, "read the tap's format")
        fmt = self._format
        if fmt.mFormatID != _LINEAR_PCM or not fmt.mFormatFlags & _FLOAT_FLAG or fmt.mBitsPerChannel != 32:
            raise TapError("read the tap's format", reason="not 32-bit float PCM")

    def create_aggregate(self) -> int:
        ca = self._ca
        key = _keys(ca)
        description = {
            key("kAudioAggregateDeviceNameKey"): "Interview Copilot system audio",
            key("kAudioAggregateDeviceUIDKey"): f"io.github.interviewcopilot.tap.{self._tap_uid}",
            key("kAudioAggregateDeviceIsPrivateKey"): True,
            key("kAudioAggregateDeviceTapListKey"): [{
                key("kAudioSubTapUIDKey"): self._tap_uid,
                key("kAudioSubTapDriftCompensationKey"): True,
            }],
        }
        status, aggregate = ca.AudioHardwareCreateAggregateDevice(description, None)
        _check(status, "create the aggregate device")
        self._aggregate = int(aggregate)
        rate = ctypes.c_double(self._format.mSampleRate)
        with contextlib.suppress(TapError):  # the blocks carry the tap's format regardless
            self._set(self._aggregate, _NOMINAL_RATE, rate, "set the aggregate's rate")
        return round(rate.value)

    def current_rate(self) -> int:
        fmt = _StreamFormat()
        self._get(self._tap, _TAP_FORMAT, fmt, "read the tap's format")
        return round(float(fmt.mSampleRate))

    def start(self, callback: BlockHandler) -> None:
        def io_proc(device: int, now: Any, inputs: Any, input_time: Any, outputs: Any,
                    output_time: Any, client: Any) -> int:
            with contextlib.suppress(Exception):  # nothing may escape into Core Audio
                block = block_of(inputs)
                if block is not None:
                    callback(block)
            return 0

        self._proc = _IOProc(io_proc)
        hal = self._hal
        _check(hal.AudioDeviceCreateIOProcID(self._aggregate, self._proc, None,
                                             ctypes.byref(self._proc_id)),
               "attach to the aggregate device")
        _check(hal.AudioDeviceStart(self._aggregate, self._proc_id), "start recording")
        self._running = True

    def stop(self) -> None:
        if self._running:
            self._running = False
            self._hal.AudioDeviceStop(self._aggregate, self._proc_id)

    def destroy(self) -> None:
        hal = self._hal
        if hal is None:  # Core Audio never loaded: nothing was made
            return
        if self._proc_id.value:
            hal.AudioDeviceDestroyIOProcID(self._aggregate, self._proc_id)
            self._proc_id = ctypes.c_void_p()
        if self._aggregate:
            hal.AudioHardwareDestroyAggregateDevice(self._aggregate)
            self._aggregate = 0
        if self._tap:
            hal.AudioHardwareDestroyProcessTap(self._tap)
            self._tap = 0

    def _load(self) -> Any:
        if self._ca is None:
            try:
                self._ca = importlib.import_module("CoreAudio")
                self._hal = _hal_library()
            except Exception as exc:  # a broken install: said, not a traceback
                raise TapError("load Core Audio",
                               reason=f"pyobjc's CoreAudio did not load: {type(exc).__name__}: {exc}"
                               ) from exc
        return self._ca

    def _get(self, obj: int, selector: int, out: Any, step: str) -> None:
        address = _PropertyAddress(selector, _GLOBAL_SCOPE, _MAIN_ELEMENT)
        size = ctypes.c_uint32(ctypes.sizeof(out))
        _check(self._hal.AudioObjectGetPropertyData(obj, ctypes.byref(address), 0, None,
                                                    ctypes.byref(size), ctypes.byref(out)), step)

    def _set(self, obj: int, selector: int, value: Any, step: str) -> None:
        address = _PropertyAddress(selector, _GLOBAL_SCOPE, _MAIN_ELEMENT)
        _check(self._hal.AudioObjectSetPropertyData(obj, ctypes.byref(address), 0, None,
                                                    ctypes.sizeof(value), ctypes.byref(value)),
               step)


def _hal_library() -> Any:
    """CoreAudio's C functions, typed (the IOProc's pointer type, 32-bit object ids)."""
    hal = ctypes.CDLL("/System/Library/Frameworks/CoreAudio.framework/CoreAudio")
    u32, ptr = ctypes.c_uint32, ctypes.c_void_p
    signatures: dict[str, list[Any]] = {
        "AudioObjectGetPropertyData": [u32, ptr, u32, ptr, ptr, ptr],
        "AudioObjectSetPropertyData": [u32, ptr, u32, ptr, u32, ptr],
        "AudioDeviceCreateIOProcID": [u32, _IOProc, ptr, ctypes.POINTER(ptr)],
        "AudioDeviceStart": [u32, ptr],
        "AudioDeviceStop": [u32, ptr],
        "AudioDeviceDestroyIOProcID": [u32, ptr],
        "AudioHardwareDestroyAggregateDevice": [u32],
        "AudioHardwareDestroyProcessTap": [u32],
    }
    for name, argtypes in signatures.items():
        function = getattr(hal, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int32
    return hal


def _audio_capture_denied() -> bool:
    """TCC's preflight for System Audio Recording says "denied" (any doubt: False, and
    macOS asks when the IO starts)."""
    try:
        tcc = ctypes.CDLL("/System/Library/PrivateFrameworks/TCC.framework/Versions/A/TCC")
        cf = ctypes.CDLL("/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation")
        cf.CFStringCreateWithCString.restype = ctypes.c_void_p
        cf.CFStringCreateWithCString.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32]
        cf.CFRelease.argtypes = [ctypes.c_void_p]
        tcc.TCCAccessPreflight.restype = ctypes.c_int
        tcc.TCCAccessPreflight.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        service = cf.CFStringCreateWithCString(None, b"kTCCServiceAudioCapture", _CF_UTF8)
        try:
            return int(tcc.TCCAccessPreflight(service, None)) == _TCC_DENIED
        finally:
            cf.CFRelease(service)
    except (OSError, AttributeError):
        return False


def _keys(ca: Any) -> Callable[[str], str]:
    """pyobjc gives the aggregate's dictionary keys (C string macros) as bytes."""
    def key(name: str) -> str:
        value = getattr(ca, name)
        return value.decode() if isinstance(value, bytes) else str(value)
    return key


def _check(status: int, step: str) -> None:
    if int(status) != 0:
        raise TapError(step, int(status))


def _status_text(status: int) -> str:
    """An OSStatus as Core Audio's headers spell it: a four-character code, else a number."""
    if status == 0:
        return "no status"
    raw = (status & 0xFFFFFFFF).to_bytes(4, "big")
    if all(32 <= b < 127 for b in raw):
        return f"error '{raw.decode('ascii')}'"
    return f"error {status}"
