"""The ``doctor`` command: its flags, the run, the exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO

from app.frontends.checks import CheckResult
from app.frontends.doctor.options import DoctorOptions
from app.frontends.doctor.report import format_result, write_json, write_summary
from app.frontends.doctor.runner import collect
from app.frontends.key_flags import KeyFlagError, add_key_flags, key_from_flags
from app.platform.redact import redact, register_secret, register_url


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="interview-copilot doctor",
                                description="Check audio, ASR and the LLM endpoint; say what to fix.")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: settings/OPENAI_BASE_URL)")
    add_key_flags(p, "default: OPENAI_API_KEY or the keychain")
    p.add_argument("--model", help="model name (default: settings/COPILOT_MODEL)")
    p.add_argument("--device", help="audio input to listen to (see --list-devices)")
    p.add_argument("--config", metavar="FILE", help="settings file")
    p.add_argument("--skip", default="", help="comma-separated groups to skip: audio,asr,llm")
    p.add_argument("--no-local", action="store_true",
                   help="with no endpoint configured, skip the LLM checks instead of starting the local LLM")
    p.add_argument("--listen", type=float, default=2.0, metavar="SECONDS", help="input level window")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="LLM read time-out")
    return p


def run_doctor(argv: list[str], out: IO[str] | None = None) -> int:
    """The ``doctor`` command: 0 when nothing failed (warnings allowed), 1 otherwise; an
    unknown flag is refused with the usage (exit 2, argparse's own)."""
    args = _parser().parse_args(argv)
    out = out or sys.stdout
    try:
        args.api_key = key_from_flags(args)
    except KeyFlagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from app.core.config import load_settings

    settings, problems = load_settings(Path(args.config) if args.config else None)
    register_secret(args.api_key)
    register_url(args.base_url or settings.llm.base_url)
    opts = DoctorOptions(base_url=args.base_url, api_key=args.api_key, model=args.model, device=args.device,
                         listen_s=args.listen, timeout_s=args.timeout, local=not args.no_local,
                         skip=frozenset(s.strip() for s in args.skip.split(",") if s.strip()))

    def emit(result: CheckResult) -> None:
        if not args.json:
            out.write(format_result(result) + "\n")
            out.flush()

    if not args.json:
        for problem in problems:
            out.write(redact(f"settings: {problem}") + "\n")
    results = collect(opts, settings, emit)
    if args.json:
        write_json(results, out)
    else:
        write_summary(results, out)
    return 1 if any(r.failed for r in results) else 0
