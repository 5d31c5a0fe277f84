"""``bench answers``: what the bundled model says, and how much of it is made up.

Every question of the corpus (``devtools/bench/know``: a résumé, a job description and
the questions an interviewer might ask about them; plus the demo's case, no documents at
all) is asked of the real embedded server (llama.cpp, SmolLM2-135M) with two prompts in
the same run, alternating which goes first so a machine that slows down slows both:

- ``today``: the full prompt as every provider gets it (the whole résumé in the prefix,
  the long system prompt, the settings' ``max_tokens``, no shape);
- ``compact``: what the bundled model gets now (:class:`app.prompt.builder.PromptBuilder`
  with ``compact=True``: the recalled lines as facts, the reply shape and its penalties).

Each variant keeps its conversation as the engine does (``record_turn`` after each answer:
``today`` sends up to eight earlier turns, ``compact`` none), and before each question the
server is made to hold that variant's prefix and history (a one-token request), as it
would in a session where only that variant ran: the first-token time is what a question
pays with a warm cache, and a conversation that outgrows the model's context shows as an
error.

``--after-guess`` (``python -m devtools.bench.answers --after-guess``) asks each question
as the engine does with low latency on (the default): a guess at the pause (the question
without its last word) is sent first and cut at its first token, as a guess the final
does not match is, then the final.  The compact prompt's facts come before the question,
so the guess has already put them in the server's cache; without a guess (low latency
off) they are read after the endpoint, and that is what the default run measures.

Per answer: words, bullets, whether a line repeats, and the *invented specifics*: numbers
(digits or number words) and names (a capitalised word inside a sentence, or one with a
capital or digit inside it) found in neither the résumé, the job description nor the
question.  The goal of issue 30: at most one answer in four with any, under 60 words, and
a first token no later than ``today``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app.core.config import Settings
from app.llm.client import ClientTuning, Delta, LlmClient
from app.llm.errors import LlmError
from app.llm.local_server import LocalServer
from app.observing.percentile import percentile
from app.prompt.builder import PromptBuilder
from app.prompt.documents import load_job_description, load_resume
from app.prompt.shape import ReplyShape

KNOW = Path(__file__).resolve().parent / "know"
DEMO_QUESTIONS = (
    "tell me about yourself",
    "what is your biggest strength",
    "tell me about a project you are proud of",
    "how many years of experience do you have",
)
"""The demo clip's kind of question, asked with no résumé: every name or number is made up."""

_NUMBER_WORDS = frozenset(
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion "
    "dozen dozens percent".split())
""""one" is left out: "one-on-one", "one thing" are not figures."""
_ALWAYS = frozenset({"i", "i'm", "i've", "i'd", "i'll", "ok", "okay"})
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+#.'/-]*[A-Za-z0-9+#]|[A-Za-z]|\d[\d.,:%]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)\s*(?:[-*+•]|\d{1,2}[.)])?\s*$")
"""What comes before the first word of a sentence or a bullet (which is capitalised anyway)."""


def invented(answer: str, *known_texts: str) -> list[str]:
    """The numbers and names in ``answer`` that none of ``known_texts`` contains."""
    known = {t.lower().strip(".,") for text in known_texts for t in _TOKEN.findall(text)}
    known |= {t.lower().rstrip("s") for t in list(known)}
    out: list[str] = []
    for match in _TOKEN.finditer(answer):
        word = match.group(0).strip(".,:")
        low = word.lower()
        if not word or low in _ALWAYS:
            continue
        number = word[0].isdigit() or low in _NUMBER_WORDS
        inner_capital = any(c.isupper() or c.isdigit() for c in word[1:])
        capitalised = word[0].isupper() and not _SENTENCE_START.search(answer[:match.start()])
        if not (number or inner_capital or capitalised):
            continue
        if low in known or low.rstrip("s") in known or low.strip("%") in known:
            continue
        out.append(word)
    return out


@dataclass
class Answer:
    variant: str
    case: str
    question: str
    text: str
    ttft: float | None
    total: float
    words: int
    bullets: int
    repeated_line: bool
    invented: list[str] = field(default_factory=list)
    repeat: int = 0
    error: bool = False
    """The request failed (a conversation longer than the model's context, for one)."""
    echoes_previous: bool = False
    """Its first line is the previous answer's: the model copied its history."""


def _builders(resume: str | None, job: str | None) -> dict[str, PromptBuilder]:
    return {"today": PromptBuilder(None, resume, job),
            "compact": PromptBuilder(None, resume, job, compact=True)}


async def _ask(client: LlmClient, messages: list[dict[str, str]], shape: ReplyShape,
               settings: Settings, extra: dict[str, Any] | None = None, *,
               first_only: bool = False) -> tuple[str, float | None, float]:
    """The answer, its first visible token's time and the whole time; ``first_only`` closes
    the stream at the first token (a guess the final replaces)."""
    sent = time.perf_counter()
    first: float | None = None
    parts: list[str] = []
    stream = shape.wrap(client.stream_chat(
        messages, max_tokens=shape.tokens(settings.llm.max_tokens),
        temperature=settings.llm.temperature, extra=extra, extra_requests=1))  # as a final's
    async with contextlib.aclosing(stream):
        async for item in stream:
            if isinstance(item, Delta) and item.text:
                if first is None and item.text.strip():
                    first = time.perf_counter() - sent
                parts.append(item.text)
                if first is not None and first_only:
                    break
    return "".join(parts), first, time.perf_counter() - sent


def _measure(variant: str, case: str, question: str, text: str, ttft: float | None, total: float,
             known: tuple[str, ...]) -> Answer:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    keys = [re.sub(r"\W+", "", re.sub(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+", "", ln)).lower() for ln in lines]
    return Answer(variant, case, question, text.strip(), ttft, total, len(text.split()),
                  sum(bool(re.match(r"^(?:[-*+•]|\d{1,2}[.)])\s", ln)) for ln in lines),
                  len(set(keys)) < len(keys), invented(text, *known, question))


async def _run(settings: Settings, limit: int | None, *, after_guess: bool = False,
               repeats: int = 1) -> list[Answer]:
    spec = json.loads((KNOW / "questions.json").read_text(encoding="utf-8"))
    resume = load_resume(KNOW / spec["resume"])
    job = load_job_description(KNOW / spec["job"])
    questions = [q["q"] for q in spec["questions"]][:limit]
    cases = [("resume", resume, job, questions), ("demo", None, None, list(DEMO_QUESTIONS[:limit]))]
    server = LocalServer()
    url = await asyncio.get_running_loop().run_in_executor(None, server.start)
    answers: list[Answer] = []
    try:
        client = LlmClient(url, server.api_key, server.model,
                           ClientTuning(spare_connections=0, timeout=120, first_token_timeout=120,
                                        rewarm=False))
        await client.start()
        try:
            for repeat, (case, res, jd, asked) in ((r, c) for r in range(repeats) for c in cases):
                builders = _builders(res, jd)
                known = tuple(t for t in (res, jd) if t)
                for i, question in enumerate(asked):
                    first_goes = (i + repeat) % 2 == 0
                    order = list(builders.items()) if first_goes else list(reversed(builders.items()))
                    for variant, builder in order:
                        # the server holds this variant's conversation so far, as in a session
                        # (one variant at a time would not be the same run; see the docstring)
                        ping = [*builder.prefix_messages(), *builder.history_messages(),
                                {"role": "user", "content": "ping"}]
                        try:
                            await _ask(client, ping, ReplyShape(max_tokens=1), settings)
                            guess = " ".join(question.split()[:-1])
                            if after_guess and guess:  # the engine's guess at the pause, then cut
                                await _ask(client, builder.messages(guess), builder.reply_shape, settings,
                                           builder.sampling(guess), first_only=True)
                            text, ttft, total = await _ask(client, builder.messages(question),
                                                           builder.reply_shape, settings,
                                                           builder.sampling(question))
                        except LlmError as exc:
                            text, ttft, total = "", None, 0.0
                            print(f"[{variant:7}] {question[:50]!r}: ERROR {exc}", flush=True)
                        answer = _measure(variant, case, question, text, ttft, total, known)
                        answer.error = not text
                        answer.repeat = repeat
                        previous = next((a for a in reversed(answers) if a.variant == variant), None)
                        answer.echoes_previous = bool(
                            text.strip() and previous is not None and previous.text
                            and text.strip().splitlines()[0] == previous.text.splitlines()[0])
                        answers.append(answer)
                        builder.record_turn(question, text, key=i)  # what the engine does
                        print(f"[{variant:7}] {question[:50]!r}: {' / '.join(text.split(chr(10)))[:150]}",
                              flush=True)
        finally:
            await client.aclose()
    finally:
        server.stop()
    return answers


def summarise(answers: list[Answer]) -> dict[str, dict[str, float | int | None]]:
    out: dict[str, dict[str, float | int | None]] = {}
    for variant in sorted({a.variant for a in answers}):
        mine = [a for a in answers if a.variant == variant]
        ttfts = [a.ttft for a in mine if a.ttft is not None]
        words = [a.words for a in mine]
        out[variant] = {
            "answers": len(mine),
            "errors": sum(a.error for a in mine),
            "with_invented": sum(bool(a.invented) for a in mine),
            "invented_specifics": sum(len(a.invented) for a in mine),
            "over_60_words": sum(w >= 60 for w in words),
            "words_median": percentile(words, 0.5) if words else None,
            "words_max": max(words) if words else None,
            "bullets_max": max(a.bullets for a in mine) if mine else None,
            "repeated_line": sum(a.repeated_line for a in mine),
            "echoes_previous": sum(a.echoes_previous for a in mine),
            "ttft_median_s": _round(percentile(ttfts, 0.5)),
            "ttft_p95_s": _round(percentile(ttfts, 0.95)),
            "ttft_ratio_to_today": _round(_paired_ratio(answers, variant)),
        }
    return out


def _paired_ratio(answers: list[Answer], variant: str) -> float | None:
    """The median over questions of this variant's first token over ``today``'s for the
    same question in the same repeat: the same-run ratio, immune to the machine's load
    drifting over the run."""
    today = {(a.case, a.question, a.repeat): a.ttft for a in answers if a.variant == "today"}
    ratios = [a.ttft / base for a in answers if a.variant == variant and a.ttft is not None
              and (base := today.get((a.case, a.question, a.repeat)))]
    return percentile(ratios, 0.5) if ratios else None


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


def run(settings: Settings, args: argparse.Namespace) -> dict[str, dict[str, float | int | None]]:
    answers = asyncio.run(_run(settings, args.limit, after_guess=getattr(args, "after_guess", False),
                               repeats=getattr(args, "repeats", 1)))
    summary = summarise(answers)
    print()
    for variant, row in summary.items():
        print(f"{variant:8} " + "  ".join(f"{k}={v}" for k, v in row.items()))
    for a in answers:
        if a.invented:
            print(f"  invented [{a.variant}/{a.case}] {a.question[:40]!r}: {', '.join(a.invented)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / ("bench-answers-after-guess.json" if getattr(args, "after_guess", False)
                    else "bench-answers.json")
    target.write_text(json.dumps({"summary": summary, "answers": [asdict(a) for a in answers]},
                                 indent=1, ensure_ascii=False))
    print(f"\nwritten: {target}")
    return summary


def main(argv: list[str] | None = None) -> int:
    """``python -m devtools.bench.answers``: the CLI's ``bench answers`` and its variants."""
    parser = argparse.ArgumentParser(prog="python -m devtools.bench.answers",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", default="bench-out", help="folder for the JSON summary")
    parser.add_argument("--limit", type=int, help="only the first N questions (of each set)")
    parser.add_argument("--after-guess", action="store_true",
                        help="send the guess at the pause before each final, as the engine does")
    parser.add_argument("--repeats", type=int, default=1, help="ask the whole corpus this many times")
    run(Settings(), parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
