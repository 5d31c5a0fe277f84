"""The fixed wording of the prompt: system prompt, few-shot examples, context framing.

Kept apart from the builder so wording can be tuned without touching the cache-sensitive
layout logic.  Every string here is part of the cached prefix: changing one invalidates
every user's cache once, so edit deliberately, and never make them depend on time or
randomness.
"""

from __future__ import annotations

_LANGUAGE_NAMES = {
    "en": "English",
    "zh": "Chinese, in the same script (simplified or traditional) as the question",
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "ru": "Russian",
    "ja": "Japanese",
    "ko": "Korean",
    "hi": "Hindi",
}

_SYSTEM_PROMPT = """\
You help a job candidate during a live interview, as a visible practice and accessibility \
aid. Apart from the background message, each user message is the interviewer's latest \
question, transcribed live by speech recognition: it may contain misheard words, missing \
punctuation or a cut-off ending. Answer the most likely intended question and never comment \
on the transcription.

Write what the candidate can say out loud, in the first person ("I ..."):
- First 2-4 bullet points ("- "), each only a few words the candidate can say at a glance.
- Then at most one short sentence of detail.
- Nothing else: no preamble such as "Sure!" or "Great question", no headings, no sign-off.

Ground the answer in the candidate's résumé when it is relevant. Never invent employers, \
job titles, degrees, certifications or figures that are not in the résumé; if the résumé \
has nothing relevant, answer honestly from transferable skills or describe an approach. \
If the message is small talk rather than a question, reply with one short natural sentence.
The first two exchanges are format examples about a made-up candidate: copy their shape, \
never their facts.
Answer in {language}."""

FEW_SHOT: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (
        (
            "so tell me about a time you had a conflict with a coworker and how you handled it",
            "- Disagreed with a teammate on release timing\n"
            "- Met one-on-one and listened first\n"
            "- Agreed on a staged rollout\n"
            "We shipped on time and kept a good working relationship.",
        ),
        (
            "what's your experience with cooper netties",
            "- Ran services on Kubernetes for two years\n"
            "- Wrote Helm charts and deploy pipelines\n"
            "- Debugged scaling issues in production\n"
            "Mostly on a managed cloud cluster.",
        ),
    ),
    "zh": (
        (
            "请你讲一下你跟同事发生冲突的一次经历你是怎么处理的",
            "- 和同事在上线时间上有分歧\n"
            "- 先单独沟通，听对方的顾虑\n"
            "- 一起商定分阶段发布\n"
            "最后按时上线，合作关系也更好了。",
        ),
        (
            "你对库伯内提斯有什么使用经验",
            "- 用 Kubernetes 部署服务两年\n"
            "- 写过 Helm 模板和发布流水线\n"
            "- 排查过线上扩容问题\n"
            "主要是在云上的托管集群里使用。",
        ),
    ),
}

CONTEXT_ACK = {
    "en": "Understood. I will answer as this candidate.",
    "zh": "明白，我会以这位候选人的身份回答。",
}

_CONTEXT_LABELS = {
    "en": (
        "Background for this interview (for reference, not a question).",
        "## My résumé",
        "## The job description",
    ),
    "zh": ("本次面试的背景资料（仅供参考，不是问题）。", "## 我的简历", "## 职位描述"),
}


def language_family(language: str) -> str:
    """"zh" for any Chinese variant (zh-CN, zh_TW, cmn), else "en": the few-shot sets we have."""
    base = language.strip().lower().replace("_", "-").split("-")[0]
    return "zh" if base in {"zh", "cmn", "yue"} else "en"


def builtin_system_prompt(language: str) -> str:
    base = language.strip().lower().replace("_", "-").split("-")[0]
    if language_family(language) == "zh":
        base = "zh"
    name = _LANGUAGE_NAMES.get(base, "the language the question is asked in")
    return _SYSTEM_PROMPT.format(language=name)


def context_message(resume: str | None, job_description: str | None, language: str) -> str | None:
    """The background message, or None when there is nothing to say (no empty headings)."""
    if not resume and not job_description:
        return None
    intro, resume_heading, jd_heading = _CONTEXT_LABELS[language_family(language)]
    parts = [intro]
    if resume:
        parts.append(f"{resume_heading}\n{resume}")
    if job_description:
        parts.append(f"{jd_heading}\n{job_description}")
    return "\n\n".join(parts)
