"""One OpenTelemetry trace per turn, rebuilt from the events every stage already emits.

The question users ask is "where did my 800 ms go?", and the answer is spread over five
threads (audio, ASR, endpointer, answer engine, UI) and one remote server.  Every stage
already stamps its events with ``t`` on the session clock, so nothing in the hot path
needs to know about tracing: :class:`TurnTracer` is a plain bus listener that feeds the
turn timeline (:mod:`app.observing.timeline`) and, when the turn's ``answer_done`` arrives, creates the
whole span tree after the fact with explicit start and end times.  That keeps the cost
while someone is talking at one dict update per event, and keeps OpenTelemetry out of
the app entirely unless tracing is switched on (it is imported lazily here).  A turn's
trace, and design notes: decision 0039.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from app.core.events import AnswerDoneEvent, Event, FirstTokenEvent
from app.observing.timeline import RequestStages, Timeline, TurnStages
from app.platform.redact import redact

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

    from app.core.clock import SessionClock

ExporterName = Literal["console", "otlp"]

INSTALL_HINT = (
    "tracing needs OpenTelemetry: pip install 'interview-copilot[diagnostics]' "
    "(opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http)"
)
GRPC_HINT = (
    "OTLP over gRPC needs pip install opentelemetry-exporter-otlp-proto-grpc; "
    "or set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (the collector's port 4318)"
)
MAX_OPEN_TURNS = 64
"""Turns that never get an answer (transcription only, failures) are dropped beyond this."""
PROVIDER = "openai"
"""gen_ai.provider.name: every endpoint we talk to speaks the OpenAI API."""


class TracingUnavailable(RuntimeError):
    """Tracing was asked for but OpenTelemetry is not installed; the message says how to fix it."""


# --- the listener ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Traced:
    """What the spans say they are about: the model, its endpoint, the session."""

    model: str | None = None
    base_url: str | None = None
    session_id: str | None = None


_NOTHING_KNOWN = Traced()


class TurnTracer:
    """Bus listener turning each answered turn into one trace; see the module docstring.

    ``exporter`` is ``"console"`` (a readable waterfall per turn on ``stream``, default
    stderr), ``"otlp"`` (to ``OTEL_EXPORTER_OTLP_ENDPOINT``, protocol from
    ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``http/protobuf`` by default or ``grpc``) or any
    OpenTelemetry ``SpanExporter`` (tests pass an in-memory one).  ``clock`` maps session
    time to wall time; without it the first event seen anchors the mapping, which is
    right for live sessions and within a few ms for the rest.
    """

    def __init__(
        self,
        exporter: ExporterName | SpanExporter = "console",
        *,
        include_text: bool = False,
        clock: SessionClock | None = None,
        about: Traced = _NOTHING_KNOWN,
        stream: IO[str] | None = None,
        epoch_origin_ns: int | None = None,
        batch: bool | None = None,
    ) -> None:
        try:
            from opentelemetry import trace
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
        except ImportError as exc:
            raise TracingUnavailable(INSTALL_HINT) from exc
        from app import __version__

        self.include_text = include_text
        self._clock = clock
        self._model = about.model
        self._server = urlsplit(about.base_url) if about.base_url else None
        self._session_id = about.session_id
        self._origin_ns = epoch_origin_ns
        # Wall minus the session clock's base, taken once: session → counter → epoch without drift.
        self._wall_minus_mono = time.time() - time.perf_counter()
        span_exporter = _make_exporter(exporter, stream)
        self._provider: TracerProvider = TracerProvider(
            resource=Resource.create({"service.name": "interview-copilot", "service.version": __version__})
        )
        # Batching keeps export I/O off the emitting thread (the answer engine's loop);
        # tests want spans the moment a turn ends.
        use_batch = batch if batch is not None else isinstance(exporter, str)
        processor = (
            BatchSpanProcessor(span_exporter, schedule_delay_millis=500)
            if use_batch
            else SimpleSpanProcessor(span_exporter)
        )
        self._provider.add_span_processor(processor)
        self._tracer: Tracer = self._provider.get_tracer("app.observing.tracing", __version__)
        self._trace = trace
        self._lock = threading.Lock()
        self._timeline = Timeline(keep_turns=MAX_OPEN_TURNS)
        self.traces_built = 0

    # --- listener ------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        if event.name == "level":
            return
        with self._lock:
            if self._origin_ns is None and self._clock is None:
                self._origin_ns = time.time_ns() - int(event.t * 1e9)
            self._timeline.feed(event)
            # A turn's trace is built when its answer is done; a later request of the same
            # turn (a regeneration) starts a trace of its own.
            done = self._timeline.forget(event.turn) if isinstance(event, AnswerDoneEvent) else None
        if done is not None:
            self._build(done)

    def flush(self, timeout_s: float = 5.0) -> None:
        """Export turns still open (unanswered at shutdown) and push buffered spans out."""
        with self._lock:
            kept = self._timeline.stages()
            for turn in kept:
                self._timeline.forget(turn.number)
            pending = [t for t in kept if t.final is not None or t.requests]
        for turn in pending:
            self._build(turn)
        self._provider.force_flush(int(timeout_s * 1000))

    def shutdown(self) -> None:
        self.flush()
        self._provider.shutdown()

    # --- building the spans ----------------------------------------------------------------

    def _ns(self, t: float) -> int:
        if self._clock is not None and self._clock.started:
            return int((self._wall_minus_mono + self._clock.to_counter(t)) * 1e9)
        origin = self._origin_ns if self._origin_ns is not None else time.time_ns()
        return origin + int(t * 1e9)

    def _span(self, name: str, start: float, end: float, parent: Span | None,
              attributes: Mapping[str, Any] | None = None) -> Span:
        """A finished span over session times ``start``..``end`` (end clamped to start)."""
        span = self._open(name, start, parent, attributes)
        span.end(end_time=self._ns(max(start, end)))
        return span

    def _open(self, name: str, start: float, parent: Span | None = None,
              attributes: Mapping[str, Any] | None = None, *, client: bool = False) -> Span:
        kind = self._trace.SpanKind.CLIENT if client else self._trace.SpanKind.INTERNAL
        context: Context | None = self._trace.set_span_in_context(parent) if parent is not None else None
        return self._tracer.start_span(
            name, context=context, kind=kind,
            attributes={k: v for k, v in (attributes or {}).items() if v is not None},
            start_time=self._ns(start),
        )

    def _build(self, turn: TurnStages) -> None:
        """All spans of one turn, children ended before their parents."""
        done = turn.done
        speech_end = turn.speech_end
        start_candidates = [t for t in (turn.speech_start, turn.first_seen) if t is not None]
        start = min(start_candidates) if start_candidates else turn.last_t
        end = max(turn.last_t, done.t if done else 0.0, turn.painted.t if turn.painted else 0.0)
        answer = turn.answer
        outcomes = [r.verdict.outcome for r in turn.requests.values() if r.verdict is not None]
        root_attrs: dict[str, Any] = {
            "copilot.turn": turn.number,
            "copilot.answered": done is not None,
            "copilot.requests": len(turn.requests),
            "copilot.speculation.outcomes": outcomes or None,
            # speech end → first token on screen: the number the user feels
        "copilot.response_latency_s": _round(turn.first_shown - speech_end)
            if turn.first_shown is not None and speech_end is not None else None,
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self._model,
            "gen_ai.conversation.id": self._session_id,
        }
        if done is not None:
            root_attrs.update(_usage_attrs(done))
            root_attrs["copilot.truncated"] = done.truncated
        if self.include_text and turn.final is not None:
            root_attrs["copilot.question"] = turn.final.text
        root = self._open(f"turn {turn.number}", start, None, root_attrs)

        if turn.speech_start is not None and speech_end is not None:
            self._span("speech", turn.speech_start, speech_end, root)
        if turn.endpoint is not None and speech_end is not None:
            self._span("endpoint wait", speech_end, turn.endpoint.t, root, {
                "copilot.endpoint.reason": turn.endpoint.reason,
                "copilot.endpoint.silence_s": _round(turn.endpoint.silence),
            })
        if turn.final is not None:
            final_start = turn.endpoint.t if turn.endpoint is not None else turn.final.t
            attrs: dict[str, Any] = {"copilot.asr.reused_partial": turn.final.reused,
                                     "copilot.asr.audio_end_s": _round(turn.final.audio_end)}
            if self.include_text:
                attrs["copilot.transcript"] = turn.final.text
            self._span("asr final", final_start, turn.final.t, root, attrs)

        for request in sorted(turn.requests.values(), key=lambda r: r.t):
            parent = root
            spec: Span | None = None
            if request.kind == "speculative":
                began = request.speculate.t if request.speculate is not None else request.t
                verdict = request.verdict
                spec = self._open(f"speculation ({verdict.outcome if verdict else 'open'})", began, root, {
                    "copilot.request": request.id,
                    "copilot.speculation.reason": request.speculate.reason if request.speculate else None,
                    "copilot.speculation.outcome": verdict.outcome if verdict else None,
                    "copilot.speculation.similarity": verdict.similarity if verdict else None,
                })
                parent = spec
            request_end = request.end if request.end is not None else end
            self._request_spans(request, request_end, parent, done if request is answer else None)
            if spec is not None:
                # The span covers its request (a hit's request goes on to be the answer);
                # the moment the final transcript decided its fate is an event on it.
                if verdict is not None:
                    spec.add_event(f"verdict: {verdict.outcome}", timestamp=self._ns(verdict.t))
                spec.end(end_time=self._ns(max(began, request_end)))

        received = answer.first_token.t if answer is not None and answer.first_token is not None else None
        if turn.first_shown is not None:
            got = received if received is not None else turn.first_shown
            self._span("first token shown", got, turn.first_shown, root, {
                "copilot.held_s": _round(turn.first_shown - got),
                "copilot.speculative": answer.kind == "speculative" if answer else None,
            })
            if turn.painted is not None:
                self._span("painted", turn.first_shown, turn.painted.t, root,
                           {"copilot.paint_latency_s": _round(turn.painted.latency)})
            if done is not None:
                self._span("answer stream", turn.first_shown, done.t, root)
        root.end(end_time=self._ns(max(start, end)))
        self.traces_built += 1

    def _request_spans(self, request: RequestStages, end: float, parent: Span,
                       done: AnswerDoneEvent | None) -> None:
        model = self._model or "unknown"
        ft = request.first_token
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.request.model": self._model,
            "gen_ai.request.stream": True,
            "gen_ai.conversation.id": self._session_id,
            "copilot.request": request.id,
            "copilot.request.kind": request.kind,
            "gen_ai.response.time_to_first_chunk": _round(ft.ttft) if ft is not None else None,
            "copilot.connection.reused": (ft.connect is None) if ft is not None else None,
            "copilot.connect_s": _round(ft.connect) if ft is not None and ft.connect is not None else None,
            "network.protocol.version": _timing(ft, "http_version"),
        }
        if self._server is not None:
            attrs["server.address"] = self._server.hostname
            attrs["server.port"] = self._server.port or (443 if self._server.scheme == "https" else 80)
        if done is not None:
            attrs.update(_usage_attrs(done))
            if done.truncated:
                attrs["error.type"] = "stream_cut"
            if self.include_text:
                attrs["gen_ai.output.messages"] = redact(json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": done.text}]}],
                    ensure_ascii=False))
        elif request.verdict is not None and request.verdict.outcome != "hit":
            attrs["copilot.discarded"] = True
        if self.include_text:
            attrs["gen_ai.input.messages"] = redact(json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": request.text}]}], ensure_ascii=False))
        span = self._open(f"chat {model}", request.t, parent, attrs, client=True)
        if ft is not None:
            self._phase_spans(request.t, ft, span)
        span.end(end_time=self._ns(max(request.t, end)))

    def _phase_spans(self, t0: float, ft: FirstTokenEvent, span: Span) -> None:
        """Connect/TLS, server wait, first byte, first token: from the client's RequestTiming.

        Only ``ttft`` and ``connect`` are on FirstTokenEvent today; ``tls``, ``sent``,
        ``headers`` and ``first_byte`` are used when the event carries them.
        """
        first_token = t0 + ft.ttft
        connect = ft.connect
        tls = _timing(ft, "tls")
        sent = _timing(ft, "sent")
        headers = _timing(ft, "headers")
        first_byte = _timing(ft, "first_byte")
        cursor = t0
        marks: list[tuple[str, float]] = []
        if connect is not None:
            conn = self._open("connect", t0, span, {"copilot.connect_s": _round(connect)})
            if isinstance(tls, float):
                self._span("tls", t0 + connect - tls, t0 + connect, conn)
            conn.end(end_time=self._ns(t0 + connect))
            cursor = t0 + connect
        sent_at = t0 + sent if isinstance(sent, float) else cursor
        marks.append(("request sent", sent_at))
        if isinstance(headers, float):
            self._span("server wait", sent_at, t0 + headers, span)
            marks.append(("response headers", t0 + headers))
            cursor = t0 + headers
            if isinstance(first_byte, float):
                self._span("first sse byte", cursor, t0 + first_byte, span)
                marks.append(("first sse byte", t0 + first_byte))
                cursor = t0 + first_byte
            self._span("first token", cursor, first_token, span)
        else:
            self._span("waiting for first token", sent_at, first_token, span)
        marks.append(("first token", first_token))
        for name, at in marks:
            span.add_event(name, timestamp=self._ns(at))


def _timing(event: FirstTokenEvent | None, name: str) -> Any:
    """A RequestTiming field FirstTokenEvent may carry (see the module docstring)."""
    return getattr(event, name, None) if event is not None else None


def _round(value: float) -> float:
    return round(value, 6)


def _usage_attrs(done: AnswerDoneEvent) -> dict[str, Any]:
    usage = done.usage
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_tokens,
        "copilot.usage.estimated": usage.estimated,
        "copilot.cost_usd": done.cost,
    }


def maybe_tracer(exporter: str | None, **kwargs: Any) -> TurnTracer | None:
    """The tracer for a ``--trace`` value (None/"off" = no tracing; nothing imported)."""
    if not exporter or exporter == "off":
        return None
    if exporter not in ("console", "otlp"):
        raise ValueError(f"unknown trace exporter {exporter!r}: use console or otlp")
    return TurnTracer(exporter, **kwargs)  # type: ignore[arg-type]


# --- exporters ----------------------------------------------------------------------------


def _make_exporter(exporter: ExporterName | SpanExporter, stream: IO[str] | None) -> SpanExporter:
    if not isinstance(exporter, str):
        return exporter
    if exporter == "console":
        return _waterfall_exporter(stream)
    if exporter == "otlp":
        protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get(
            "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        if protocol == "grpc":
            # Neither the diagnostics extra nor the installers carry it: gRPC alone weighs
            # 17 MB, and OTLP over HTTP needs none.  Installed by hand, it is used.
            try:
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found, unused-ignore]
                    OTLPSpanExporter as GrpcExporter,
                )
            except ImportError as exc:
                raise TracingUnavailable(GRPC_HINT) from exc
            grpc_exporter: SpanExporter = GrpcExporter()  # typed here: Any when not installed
            return grpc_exporter
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise TracingUnavailable(INSTALL_HINT) from exc
        return OTLPSpanExporter()
    raise ValueError(f"unknown trace exporter {exporter!r}: use console or otlp")


def _waterfall_exporter(stream: IO[str] | None) -> SpanExporter:
    """A readable waterfall per turn: the point is answering "where did the time go" in a
    terminal, and OpenTelemetry's own console exporter prints a page of JSON per span."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class WaterfallExporter(SpanExporter):
        def __init__(self, out: IO[str] | None) -> None:
            self._out = out
            self._lock = threading.Lock()
            self._pending: dict[int, list[ReadableSpan]] = {}

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            ready: list[list[ReadableSpan]] = []
            with self._lock:
                for span in spans:
                    ctx = span.context
                    if ctx is None:
                        continue
                    self._pending.setdefault(ctx.trace_id, []).append(span)
                    if span.parent is None:  # the root ends (and is exported) last
                        ready.append(self._pending.pop(ctx.trace_id))
            out = self._out or sys.stderr
            for trace_spans in ready:
                out.write(redact(format_waterfall(trace_spans)))
                out.flush()
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            with self._lock:
                self._pending.clear()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    return WaterfallExporter(stream)


_SHOWN_ATTRS = {
    "copilot.response_latency_s": "response",
    "copilot.endpoint.reason": "reason",
    "copilot.connection.reused": "reused",
    "copilot.connect_s": "connect",
    "gen_ai.response.time_to_first_chunk": "ttft",
    "gen_ai.usage.input_tokens": "in",
    "gen_ai.usage.cache_read.input_tokens": "cached",
    "gen_ai.usage.output_tokens": "out",
    "network.protocol.version": "http",
}


def format_waterfall(spans: Sequence[ReadableSpan], width: int = 32) -> str:
    """Spans of one trace as an indented timeline, offsets in ms from the root's start."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in by_id else None
        children.setdefault(parent, []).append(s)
    roots = children.get(None, [])
    if not roots:
        return ""
    origin = min(s.start_time or 0 for s in roots)
    buf = io.StringIO()

    def walk(span: ReadableSpan, depth: int) -> None:
        start = ((span.start_time or origin) - origin) / 1e6
        dur = ((span.end_time or span.start_time or origin) - (span.start_time or origin)) / 1e6
        attrs = span.attributes or {}
        extra = "  ".join(f"{label}={_fmt(attrs[k])}" for k, label in _SHOWN_ATTRS.items() if k in attrs)
        name = ("  " * depth + span.name)[:width]
        buf.write(f"{name:<{width}} {start:>8.1f} ms {dur:>8.1f} ms  {extra}".rstrip() + "\n")
        for child in sorted(children.get(span.context.span_id if span.context else None, []),
                            key=_start_key):
            walk(child, depth + 1)

    for root in sorted(roots, key=_start_key):
        trace_id = root.context.trace_id if root.context is not None else 0
        buf.write(f"── {root.name}  trace {trace_id:032x}\n")
        walk(root, 0)
    return buf.getvalue()


def _start_key(span: ReadableSpan) -> int:
    return span.start_time or 0


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value * 1000:.0f}ms" if value < 100 else f"{value:g}"
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    return str(value)

