"""The fixed wording of the prompt: system prompt, few-shot examples, context framing.

Kept apart from the builder so wording can be tuned without touching the cache-sensitive
layout logic.  Every string here is part of the cached prefix: changing one invalidates
every user's cache once, so edit deliberately, and never make them depend on time or
randomness.

Chinese sessions get a prompt written in Chinese, not the English one saying "answer in
Chinese": small and relay-hosted models follow the prompt's own language far more
reliably, and a Chinese-English question ("Redis 为什么这么快？") then gets a Chinese
answer that keeps the English technical terms.  Traditional-script sessions ("zh-Hant",
"zh-TW", "zh-HK") get the same texts converted by OpenCC, which is deterministic, so the
prefix stays byte-stable.
"""

from __future__ import annotations

from functools import cache

from app.asr.script import ScriptConverter

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

_SYSTEM_PROMPT_ZH = """\
你在一场实时面试中帮助求职者，是公开使用的练习和辅助工具。除了背景资料那条消息，每条用户\
消息都是面试官刚问的问题，由语音识别实时转写：可能有听错的字、缺少标点或句子没说完。请回答\
最可能的本意，不要评论转写本身。

写候选人可以直接说出口的话，用第一人称（“我……”），口语化，像面试时自然地说：
- 先给 2-4 条要点（以“- ”开头），每条只有几个词，候选人扫一眼就能说。
- 然后最多一句简短的补充。
- 不要别的内容：不要“好的！”“这个问题很好”之类的开场白，不要标题，不要结束语。

相关时以候选人的简历为依据。不要编造简历里没有的雇主、职位、学历、证书或数字；简历里没有\
相关内容时，就用可迁移的能力如实回答，或讲清思路。如果消息是寒暄而不是问题，用一句简短自然\
的话回应。
前两组对话是一位虚构候选人的格式示例：模仿它们的形式，不要照搬内容。
始终用{script}中文回答，即使问题里夹杂英文；技术名词（如 Redis、Kubernetes）保留英文原文。"""

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
            "- 先单独聊，听他的顾虑\n"
            "- 一起定了分阶段发布\n"
            "最后按时上线，合作关系也更好了。",
        ),
        (
            "你对 Kubernetes 有什么使用经验，比如 scaling 这块",
            "- 用 Kubernetes 部署服务两年\n"
            "- 写过 Helm 模板和发布流水线\n"
            "- 线上 scaling 问题我排查过\n"
            "主要是在云上的托管集群里用。",
        ),
    ),
}

CANDIDATE_SAID = {
    "en": "(What I actually said: {said})",
    "zh": "（我实际说的是：{said}）",
}
"""The candidate's own words after a suggestion, so follow-up questions have context."""

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


_TRADITIONAL_TAGS = {"hant", "tw", "hk", "mo"}


def prompt_language(language: str, chinese_script: str = "simplified") -> str:
    """The prompt's language tag for an ASR language and caption script: "zh-Hant" for
    Chinese shown in a Traditional script, else the language itself."""
    if language_family(language) == "zh" and chinese_script != "simplified":
        return "zh-Hant"
    return language


def is_traditional(language: str) -> bool:
    parts = language.strip().lower().replace("_", "-").split("-")
    return language_family(language) == "zh" and any(p in _TRADITIONAL_TAGS for p in parts[1:])


@cache
def _traditional(text: str) -> str:
    return ScriptConverter("traditional").convert(text)


def localise(text: str, language: str) -> str:
    """Chinese texts in the session's script (they are written in Simplified)."""
    return _traditional(text) if is_traditional(language) else text


def language_family(language: str) -> str:
    """"zh" for any Chinese variant (zh-CN, zh_TW, cmn), else "en": the few-shot sets we have."""
    base = language.strip().lower().replace("_", "-").split("-")[0]
    return "zh" if base in {"zh", "cmn", "yue"} else "en"


def builtin_system_prompt(language: str) -> str:
    base = language.strip().lower().replace("_", "-").split("-")[0]
    if language_family(language) == "zh":
        traditional = is_traditional(language)
        return localise(_SYSTEM_PROMPT_ZH.format(script="繁体" if traditional else "简体"), language)
    name = _LANGUAGE_NAMES.get(base, "the language the question is asked in")
    return _SYSTEM_PROMPT.format(language=name)


def context_message(resume: str | None, job_description: str | None, language: str) -> str | None:
    """The background message, or None when there is nothing to say (no empty headings)."""
    if not resume and not job_description:
        return None
    intro, resume_heading, jd_heading = (
        localise(label, language) for label in _CONTEXT_LABELS[language_family(language)])
    parts = [intro]
    if resume:
        parts.append(f"{resume_heading}\n{resume}")
    if job_description:
        parts.append(f"{jd_heading}\n{job_description}")
    return "\n\n".join(parts)


# --- the compact prompt: the bundled 135M model -------------------------------------------

COMPACT_SYSTEM_PROMPT = """\
You are a job candidate in an interview. Answer the interviewer's question in the first \
person with at most three short bullet points. Use only the facts given with the question. \
If no fact fits, answer in general terms such as "in my last role". Never write a number, \
a name, a company or a tool that is not in the facts."""
"""For a model of 135M parameters: four sentences it can follow, no format spec it cannot.
The long prompt's rules (headings, sign-offs, transcription errors) only dilute these."""

COMPACT_FEW_SHOT: tuple[tuple[str, str], ...] = (
    (
        "Facts:\n- Led the redesign of the billing page with the design team\n\n"
        "Question: tell me about a project you are proud of",
        "- I led the redesign of our billing page\n"
        "- I worked closely with the design team\n"
        "- Customers found it much easier to use",
    ),
    (
        "Facts: none\n\nQuestion: how many years of experience do you have",
        "- Several years building backend services\n"
        "- Most recently in my last role on a platform team\n"
        "- Always close to production",
    ),
    (
        "Facts: none\n\nQuestion: tell me a little about yourself",
        "- I'm an engineer who likes solving practical problems\n"
        "- In my last role I worked across the whole product\n"
        "- I'm looking for a team where I keep learning",
    ),
)
"""Three exchanges that show the shape and the honesty: facts restated in the first
person, and no facts answered in general terms ("several years", never a figure; "about
yourself" without a name: the demo, with no résumé, introduced an invented person).  They
hold no name and no number on purpose: whatever a small model sees here it repeats, and
anything it repeats would be invented."""

COMPACT_QUESTION = "Facts:\n{facts}\n\nQuestion: {question}"
COMPACT_NO_FACTS = "Facts: none\n\nQuestion: {question}"
COMPACT_ABOUT = "About me:\n{about}"
COMPACT_ABOUT_ACK = "Understood."


def compact_question(question: str, facts: list[str]) -> str:
    """The last user message of a compact request: the recalled lines, then the question.

    Facts first: the engine's guess at the pause has the same lines (the last word rarely
    changes them), so by the final they are in llama.cpp's cache and only the question is
    read after the endpoint (`bench answers --after-guess`; docs/benchmarks.md)."""
    if not facts:
        return COMPACT_NO_FACTS.format(question=question)
    return COMPACT_QUESTION.format(facts="\n".join(f"- {fact}" for fact in facts), question=question)
