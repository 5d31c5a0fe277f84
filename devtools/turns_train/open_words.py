"""Which word-boundary cuts the head is taught as "goes on": only those whose words cannot
end a question, as words.

A cut is labelled 0 only where its last word is a closed-class word that leaves the clause
open (an article or possessive before its noun, a conjunction, a preposition with nothing
earlier that could be its object, an auxiliary before its subject, a wh-word before its
verb, a subject pronoun before its verb, a hesitation); a cut after any other word may be
a whole question ("when can you start" / "...start with a slow query") and is not taught
at all.  Mandarin by the same rule with its own closed classes (a coverb, a conjunction, a
modal, a measure word, 的 outside a 是…的 frame).  Open-class words are never listed: what
is not in a closed class counts as a possible end.
"""

from __future__ import annotations

from collections.abc import Sequence

_EN_DETERMINERS = frozenset("a an the every my your our their its whose".split())
"""Need a noun after them ("this", "that", "some", "any", "her", "his" may stand alone)."""
_EN_CONJUNCTIONS = frozenset("and or but if because whether than nor so unless although as versus vs "
                             "whereas".split())
_EN_PREPOSITIONS = frozenset("about with of in on for from to at into through between under "
                             "across towards toward during among via per".split())
"""Open unless a wh-word earlier may be their object ("what are you proud of")."""
_EN_OBJECT_WH = frozenset("what which who whom whose where what's who's where's".split())
_EN_WH = frozenset("what which who whom where when why how what's how's where's who's".split())
"""Open before their verb; a lone one ("why?", "how?") is a question."""
_EN_AUXILIARIES = frozenset(
    "can could would will should shall may might must do does did have has had is are was were am "
    "don't doesn't didn't haven't hasn't isn't aren't wasn't weren't can't couldn't wouldn't won't "
    "shouldn't".split())
"""Open before their subject (at the start, after a wh-word or a conjunction); after one
("what do you do", "how much experience do you have") a main verb or an ellipsis."""
_EN_BE = frozenset("is are was were am isn't aren't wasn't weren't".split())
_EN_CONTRACTED = frozenset("i'd you'd we'd they'd i'll you'll we'll i'm you're we're they're i've "
                           "you've we've they've let's".split())
"""A subject with its auxiliary: the verb is still to come."""
_EN_SUBJECTS = frozenset("i we they he she".split())
_EN_HESITATIONS = frozenset("um uh er erm hmm uhm mm".split())

_ZH_COVERBS = frozenset("在 把 对 给 跟 从 被 比 向 往 为 关于 对于 由 让 和 与 同".split())
"""No stranding in Mandarin: a coverb needs its object (和, 跟 also join two nouns)."""
_ZH_CONJUNCTIONS = frozenset("或者 还是 如果 要是 假如 因为 但是 而且 所以 然后 并且 或 以及 而 "
                             "那么 就是 就是说".split())
_ZH_MODALS = frozenset("会 能 要 想 应该 打算".split())
_ZH_WH = frozenset("怎么 如何 为什么".split())
"""Open before their verb ("什么", "哪个", "多久" end questions); a lone one is a question."""
_ZH_SUBJECTS = frozenset("你 我 我们 你们 他 她 他们".split())
_ZH_NUMERALS = "一二两三四五六七八九十几第"
_ZH_MEASURES = "个次件段份篇种项位条本"
_ZH_HESITATIONS = frozenset("嗯 呃 额".split())
_ZH_LEADS = frozenset("那 好 那个 接下来".split())


def closed_class(language: str) -> frozenset[str]:
    """Every word the rule may call open in some context (numeral + measure aside): a cut
    that ends on none of them ends on a word that may end a question."""
    if language == "zh":
        return (_ZH_COVERBS | _ZH_CONJUNCTIONS | _ZH_MODALS | _ZH_WH | _ZH_SUBJECTS | _ZH_HESITATIONS
                | {"的"})
    return (_EN_DETERMINERS | _EN_CONJUNCTIONS | _EN_PREPOSITIONS | _EN_WH | _EN_AUXILIARIES
            | _EN_CONTRACTED | _EN_SUBJECTS | _EN_HESITATIONS | {"you"})


def leaves_open(words: Sequence[str], language: str) -> bool:
    """Whether ``words`` (a question's first words, a lead or a filler included) end on a
    word that leaves the clause open, so that they cannot be a whole question."""
    if not words:
        return False
    return _zh_open(words) if language == "zh" else _en_open([w.lower() for w in words])


def _en_open(words: Sequence[str]) -> bool:
    last, before = words[-1], words[:-1]
    prev = before[-1] if before else ""
    if last in _EN_DETERMINERS | _EN_CONJUNCTIONS | _EN_CONTRACTED | _EN_HESITATIONS | _EN_SUBJECTS:
        return True
    if last in _EN_PREPOSITIONS:
        return not _EN_OBJECT_WH & set(before)
    if last in _EN_WH:
        return any(w not in _EN_CONJUNCTIONS | _EN_HESITATIONS | _LEADS for w in before)
    if last in _EN_AUXILIARIES:
        return not prev or prev in _EN_WH | _EN_CONJUNCTIONS | _EN_HESITATIONS | _LEADS
    if last == "you":  # a subject still to get its verb; after "be" ("how comfortable are you")
        return prev in (_EN_AUXILIARIES - _EN_BE) | _EN_WH | _EN_CONJUNCTIONS  # or a verb, whole
    return False


_LEADS = frozenset("okay alright now well".split())
"""Words that open a turn ahead of the question (the auxiliary after them still leads)."""


def _zh_open(words: Sequence[str]) -> bool:
    last, before = words[-1], words[:-1]
    prev = before[-1] if before else ""
    if last in _ZH_COVERBS | _ZH_CONJUNCTIONS | _ZH_MODALS | _ZH_HESITATIONS:
        return True
    if last.endswith("的"):  # a modifier or possessive before its noun, unless 是…的 may close
        return "是" not in before
    if last[-1] in _ZH_MEASURES and all(c in _ZH_NUMERALS for c in last[:-1]):
        return True
    if last in _ZH_WH:
        return any(w not in _ZH_CONJUNCTIONS | _ZH_HESITATIONS | _ZH_LEADS for w in before)
    if last in _ZH_SUBJECTS:  # a subject before its verb; after a verb, an object
        return not prev or prev in _ZH_COVERBS | _ZH_CONJUNCTIONS | _ZH_HESITATIONS | _ZH_LEADS
    return False
