"""Endpoint and speculation rules, with plain numbers on the audio clock."""

import math

import pytest

from app.audio.frames import FRAME_MS
from app.core.config import TurnConfig
from app.turns.endpointer import Decision, Discard, Endpoint, Endpointer, OpenTurn, Speculate
from devtools.bench.baselines import TextRulesPolicy


def started(cfg: TurnConfig | None = None, language: str = "en") -> Endpointer:
    ep = Endpointer(cfg or TurnConfig(), language)
    ep.speech_started(1, 0.5)
    return ep


def speak_until(ep: Endpointer, t_end: float, start: float = 0.5) -> None:
    t = start
    while t < t_end - 1e-9:
        t = min(round(t + 0.03, 3), t_end)
        ep.voiced(t)
        assert ep.tick(t) == []


def test_no_decision_while_the_partial_lags_the_voice() -> None:
    ep = started()
    speak_until(ep, 2.0)
    # decoded up to 1.7 but voice went on to 2.0: not current, even with a long question
    assert ep.partial(1, "Why are you interested in this role, and why now?", "", 1.7, 2.0) == []


def test_current_long_question_speculates_at_once() -> None:
    ep = started()
    speak_until(ep, 2.0)
    text = "Why are you interested in this role, and why now?"
    assert ep.partial(1, text, "Why", 2.0, 2.06) == []  # a gap between words, maybe
    assert ep.tick(2.15) == [Speculate(1, text, "question")]  # a pause: guess now


def test_a_short_gap_inside_the_question_is_no_pause() -> None:
    ep = started()
    speak_until(ep, 2.0)
    assert ep.partial(1, "What is the difference between a process?", "", 2.0, 2.09) == []
    speak_until(ep, 2.5, start=2.09)  # the speaker goes on: no guess was sent
    assert ep.partial(1, "What is the difference between a process and a thread?", "", 2.5, 2.65)


def test_end_word_speculates_even_when_short() -> None:
    ep = started()
    speak_until(ep, 1.5)
    out = ep.partial(1, "Kubernetes, right?", "", 1.5, 1.65)
    assert out[0] == Speculate(1, "Kubernetes, right?", "end_word")
    ep2 = started()
    speak_until(ep2, 1.5)
    assert ep2.partial(1, "Tell me more, you know.", "", 1.5, 1.65)[0].reason == "end_word"  # type: ignore[union-attr]


def test_end_word_needs_a_word_boundary() -> None:
    # Any current partial after a pause is now a guess; what matters is that it is not
    # taken for an end word.
    ep = started()
    speak_until(ep, 1.5)
    assert [d.reason for d in ep.partial(1, "Is that outright", "", 1.5, 1.75)] == ["silence"]  # type: ignore[union-attr]
    assert [d.reason for d in ep.partial(1, "Do you turn right", "", 1.5, 1.75)] == ["silence"]  # type: ignore[union-attr]


def test_end_word_ignores_the_recognisers_punctuation() -> None:
    ep = started()
    speak_until(ep, 2.0)
    out = ep.partial(1, "How do you prioritize when everything is urgent? Right.", "", 2.0, 2.15)
    assert out[0].reason == "end_word"  # type: ignore[union-attr]


def test_an_end_word_twice_in_a_row_shortens_the_endpoint_like_a_question() -> None:
    ep = started()
    speak_until(ep, 2.0)
    ep.partial(1, "How do you keep up with new technology, you know.", "", 1.9, 2.0)
    ep.partial(1, "How do you keep up with new technology, you know.", "", 2.0, 2.1)
    assert any(isinstance(d, Endpoint) and d.reason == "question" for d in ep.tick(2.4))


def test_chinese_end_words() -> None:
    ep = started(language="zh")
    speak_until(ep, 1.5)
    assert ep.partial(1, "你用过 Kubernetes，对吧？", "", 1.5, 1.65)[0].reason == "end_word"  # type: ignore[union-attr]


def _first_tick(ms: float) -> float:
    """Seconds of silence at the first frame tick that reaches ``ms``."""
    return round(math.ceil(ms / FRAME_MS - 1e-9) * FRAME_MS / 1000, 2)


QUESTION_WAIT = _first_tick(TurnConfig().endpoint_question_silence_ms)
"""Where "?" twice in a row ends the turn (the rules' question wait)..."""
SILENCE_WAIT = _first_tick(TurnConfig().endpoint_silence_ms)
"""...and where anything else does."""


def _endpoint_after(language: str, *partials: str) -> float | None:
    """Seconds of silence after which the turn ends, the voice stopping at 2.0 s and the
    partials landing one after another up to it."""
    ep = started(language=language)
    speak_until(ep, 2.0)
    for i, text in enumerate(partials):
        ep.partial(1, text, "", 2.0 - 0.1 * (len(partials) - 1 - i), 2.0)
    t = 2.0
    while t < 3.5:
        t = round(t + 0.03, 3)
        if any(isinstance(d, Endpoint) for d in ep.tick(t)):
            return round(t - 2.0, 2)
    return None


def test_a_chinese_wh_question_closed_with_a_full_stop_ends_like_a_question_mark() -> None:
    """Whisper writes "。" or "？" after a Mandarin wh-question as it likes (no rising
    pitch to hear): the question word makes it one, as "？" does."""
    asked = _endpoint_after("zh", "进程和线程有什么区？", "进程和线程有什么区别？")
    assert asked == _endpoint_after("zh", "进程和线程有什么区。", "进程和线程有什么区别。") == QUESTION_WAIT
    assert _endpoint_after("zh", "缓存穿透是什么，怎么解。", "缓存穿透是什么，怎么解决！") == QUESTION_WAIT


def test_a_finished_mandarin_question_ends_by_the_question_rule_after_one_pass_that_heard_it_all() -> None:
    """什么？, 吗, 呢 closing the words a pass heard up to the voice's end: the question wait,
    not the silence wait, even when the partials before it were cut mid-sentence."""
    assert _endpoint_after("zh", "进程和线程有什么区", "进程和线程有什么区别。") == QUESTION_WAIT
    assert _endpoint_after("zh", "你能接受加", "你能接受加班吗") == QUESTION_WAIT
    assert _endpoint_after("zh", "你还有什么问", "你的看法呢？") == QUESTION_WAIT
    # a "？" alone is the recogniser's guess: an unfinished clause it closed still waits
    assert _endpoint_after("zh", "你能不能给我讲", "你能不能给我讲一下？") == SILENCE_WAIT


def test_a_chinese_full_stop_without_a_question_word_still_waits() -> None:
    assert QUESTION_WAIT < SILENCE_WAIT
    assert _endpoint_after("zh", "请先简单介绍一下你。", "请先简单介绍一下你自己。") == SILENCE_WAIT
    # the question word is in a sentence already finished: the last one asks nothing
    told = ("讲讲什么是死锁。讲一个你的项目。", "讲讲什么是死锁。讲一个你的项目经历。")
    assert _endpoint_after("zh", *told) == SILENCE_WAIT
    # not closed: the recogniser does not say the sentence ended
    assert _endpoint_after("zh", "进程和线程有什么区", "进程和线程有什么区别") == SILENCE_WAIT
    # English has no question words that finish a sentence ("What is the…" goes on)
    assert _endpoint_after("en", "What is the difference.", "What is the difference.") == SILENCE_WAIT


def test_rules_mode_speculates_after_250_ms_then_endpoints_after_800() -> None:
    """The text-rules endpointer of before the signals, kept as the benchmark's ``rules``
    baseline (a policy the endpointer is given): with the product's signals policy the
    guess goes out at the first current partial after 150 ms instead (see
    tests/turns/test_policy.py)."""
    ep = Endpointer(TurnConfig(), policy=TextRulesPolicy())
    ep.speech_started(1, 0.5)
    speak_until(ep, 2.0)
    assert ep.partial(1, "Tell me about yourself.", "", 2.0, 2.06) == []
    assert ep.tick(2.21) == []
    assert ep.tick(2.25) == [Speculate(1, "Tell me about yourself.", "silence")]
    assert ep.tick(2.7) == []
    out = ep.tick(2.8)
    assert out == [Endpoint(1, "silence", out[0].silence)] and abs(out[0].silence - 0.8) < 1e-6  # type: ignore[union-attr]
    assert ep.tick(3.5) == []  # the turn is over: nothing more


def test_same_text_speculates_once() -> None:
    ep = started()
    speak_until(ep, 2.0)
    assert len(ep.partial(1, "Why are you interested in this role?", "", 2.0, 2.15)) == 1
    assert ep.partial(1, "why are you interested in this role", "", 2.0, 2.2) == []


def test_question_twice_in_a_row_shortens_the_endpoint() -> None:
    ep = started()
    speak_until(ep, 2.0)
    ep.partial(1, "Why are you interested in this?", "", 1.8, 2.0)
    ep.partial(1, "Why are you interested in this role?", "Why are you", 2.0, 2.1)
    assert ep.tick(2.15) == [Speculate(1, "Why are you interested in this role?", "question")]
    assert ep.tick(2.37) == []
    out = ep.tick(2.4)
    assert isinstance(out[-1], Endpoint) and out[-1].reason == "question"


def test_a_single_question_mark_does_not_shorten_it() -> None:
    ep = started()
    speak_until(ep, 2.0)
    ep.partial(1, "So you have used Kubernetes before", "", 1.8, 2.0)
    ep.partial(1, "So you have used Kubernetes before?", "", 2.0, 2.05)
    assert [d for d in ep.tick(2.5) if isinstance(d, Endpoint)] == []


def test_mid_question_pause_of_700_ms_does_not_end_the_turn() -> None:
    ep = started()
    speak_until(ep, 3.0)
    ep.partial(1, "Tell me about a time you disagreed with your manager.", "", 3.0, 3.05)
    for t in (3.1, 3.3, 3.5, 3.7):
        assert not any(isinstance(d, Endpoint) for d in ep.tick(t))
    speak_until(ep, 4.5, start=3.7)  # speech resumes after 0.7 s
    full = "Tell me about a time you disagreed with your manager. How did you handle it?"
    ep.partial(1, full, "", 4.5, 4.5)
    assert not any(isinstance(d, Endpoint) for d in ep.tick(4.6))


def test_trailing_conjunction_waits_longer() -> None:
    ep = started()
    speak_until(ep, 2.0)
    ep.partial(1, "I want to know about your last project and", "", 2.0, 2.0)
    assert not any(isinstance(d, Endpoint) for d in ep.tick(3.0))
    assert not any(isinstance(d, Endpoint) for d in ep.tick(3.45))
    assert any(isinstance(d, Endpoint) for d in ep.tick(3.5))


@pytest.mark.parametrize(("text", "trails"), [
    ("Walk me through how you would design the rate limit or...", True),  # a sentence left hanging
    ("Walk me through how you would design the rate limit or…", True),
    ("And so…", True),
    ("Tell me about your last project...", False),  # hanging, but on no thinking word
    ("Walk me through how you would design the rate limit or.", False),  # a full stop
])
def test_an_ellipsis_is_no_full_stop(text: str, trails: bool) -> None:
    """The recogniser writes "..." for a sentence left hanging: a thinking word before it
    still trails off, so the pause's words get their second look with a beam (decision 0024)."""
    assert started().trails_off(text) is trails


def test_thresholds_come_from_config() -> None:
    # words nothing calls finished are guessed after speculate_silence_ms; with no model
    # signal the silence wait ends the turn
    ep = started(TurnConfig(speculate_min_pause_ms=100, speculate_silence_ms=100, endpoint_silence_ms=400))
    speak_until(ep, 2.0)
    ep.partial(1, "Tell me about yourself.", "", 2.0, 2.0)
    assert ep.tick(2.1)[0] == Speculate(1, "Tell me about yourself.", "silence")
    assert isinstance(ep.tick(2.4)[0], Endpoint)


def test_speech_that_decodes_to_no_words_is_discarded_not_endpointed() -> None:
    ep = started()
    speak_until(ep, 1.0)
    ep.no_words(1, 1.09)  # a pass over all the voice heard nothing
    assert ep.tick(1.5) == []  # not yet the silence endpoint
    assert ep.tick(1.81) == [Discard(1)]  # endpoint_silence_ms (800) of silence and no words
    assert ep.tick(5.0) == []  # forgotten: the next speech is a turn of its own


def test_speech_whose_decode_is_late_is_not_discarded() -> None:
    """A slow machine's first pass may come back long after the pause: no words *yet* is
    not a noise, and the question it turns out to be is answered."""
    ep = started()
    speak_until(ep, 1.0)
    ep.no_words(1, 0.6)  # an early pass heard nothing: the voice went on after it
    assert ep.tick(3.0) == []
    decisions = ep.partial(1, "Why are you interested in this role?", "", 1.09, 3.1)
    assert any(isinstance(d, Endpoint) for d in decisions)


def test_a_discarded_turn_is_not_ended_by_a_late_partial() -> None:
    ep = started()
    speak_until(ep, 1.0)
    assert ep.discard() == [Discard(1)]
    assert ep.partial(1, "Why are you interested in this role?", "", 1.09, 3.0) == []
    assert ep.discard() == [] and ep.tick(5.0) == []


def test_force_ends_the_turn_with_what_was_heard() -> None:
    ep = started()
    speak_until(ep, 1.0)
    assert ep.force(1.2) == [Endpoint(1, "forced", ep_silence := 0.2)] or ep_silence
    assert ep.force(1.3) == []


def test_partials_of_an_old_utterance_are_ignored() -> None:
    ep = started()
    ep.speech_started(2, 3.0)
    assert ep.partial(1, "Why are you interested in this role?", "", 3.0, 3.0) == []


# --- the guess at the pause (issue 29) ---------------------------------------------------

FINISHED = TurnConfig().words_complete_logp + 1.0
"""A words-model score above the 'finished' threshold, whatever the setting."""
UNSURE = (TurnConfig().words_complete_logp + TurnConfig().words_incomplete_logp) / 2
"""One halfway between 'unfinished' and 'finished'."""
WHOLE = "Why are you interested in this role?"


def _heard_before_the_pause(ep: Endpointer, logp: float | None) -> list[Decision]:
    """The voice runs to 2.0 s; the last partial, decoded up to 1.8 s while it went on,
    already holds the whole question (and the words model scored it, unless None)."""
    speak_until(ep, 1.95)
    out = ep.partial(1, WHOLE, "", 1.8, 1.95)
    if logp is not None:
        out += ep.end_of_turn_scores(1, WHOLE, 1.8, 1.95, words_logp=logp)
    for t in (1.98, 2.0):
        ep.voiced(t)
        out += ep.tick(t)
    return out


def _ticks(ep: Endpointer, until: float, since: float = 2.0) -> list[tuple[float, Decision]]:
    """Frame ticks after the voice stopped at 2.0 s, from ``since`` to ``until``: (silence
    in s, decision) for each decision."""
    out = []
    for k in range(1, 200):
        t = round(2.0 + k * FRAME_MS / 1000, 3)
        if since < t <= until + 1e-9:
            out += [(round(t - 2.0, 2), d) for d in ep.tick(t)]
    return out


def test_words_called_finished_before_the_pause_are_guessed_when_the_voice_stops() -> None:
    """No pass after the pause (it was given up, or the room tone kept the VAD busy): the
    whole question was heard before it, and the words model called it finished."""
    cfg = TurnConfig()
    ep = started(cfg)
    ep.expect_words(True)
    assert _heard_before_the_pause(ep, FINISHED) == []  # the voice went on: nothing yet
    decisions = _ticks(ep, 3.0)
    assert decisions[0] == (_first_tick(cfg.speculate_ahead_ms), Speculate(1, WHOLE, "question"))
    ends = [(s, d) for s, d in decisions if isinstance(d, Endpoint)]
    assert [s for s, _ in ends] == [_first_tick(cfg.endpoint_complete_ms)]  # not the silence wait


def test_the_pass_that_hears_the_pause_confirms_the_guess_or_replaces_it() -> None:
    cfg = TurnConfig(speculate_ahead_ms=FRAME_MS)  # guessed when the VAD calls the pause
    guessed = 2.0 + _first_tick(cfg.speculate_ahead_ms)
    landed = 2.0 + _first_tick(cfg.speculate_min_pause_ms)  # the pass that heard it all
    assert guessed < landed < 2.0 + cfg.endpoint_complete_ms / 1000
    # the same words again: one guess, no second request
    ep = started(cfg)
    ep.expect_words(True)
    _heard_before_the_pause(ep, FINISHED)
    assert [d for _, d in _ticks(ep, guessed)] == [Speculate(1, WHOLE, "question")]
    assert ep.partial(1, WHOLE, "", 2.09, landed) == []
    # more words: they are guessed in turn (the answer engine cancels the first guess)
    ep = started(cfg)
    ep.expect_words(True)
    _heard_before_the_pause(ep, FINISHED)
    _ticks(ep, guessed)
    longer = "Why are you interested in this role at our company?"
    assert ep.partial(1, longer, "", 2.09, landed) == []  # its own verdict first
    assert ep.end_of_turn_scores(1, longer, 2.09, landed, words_logp=FINISHED) == [
        Speculate(1, longer, "question")]


def test_while_a_pass_that_will_hear_the_pause_is_coming_the_guess_waits_for_it() -> None:
    """A partial decoded before the voice stopped often lacks the last syllable ("…simple
    term?" for "…terms?"): while a pass is running or wanted, its words are waited for,
    neither guessed nor taken to end the turn (the pass would be given up for the final)."""
    cfg = TurnConfig()
    ep = started(cfg)
    ep.expect_words(True)
    _heard_before_the_pause(ep, FINISHED)
    ep.expect_pass(True)
    due = 2.0 + _first_tick(max(cfg.speculate_ahead_ms, cfg.endpoint_complete_ms))
    assert _ticks(ep, due + 0.06) == []
    ep.expect_pass(False)  # it came to nothing (given up, no words, or not the last voice)
    later = [d for _, d in _ticks(ep, due + 0.09, since=due + 0.06)]
    assert later[0] == Speculate(1, WHOLE, "question") and isinstance(later[-1], Endpoint)


def test_words_the_model_is_unsure_of_wait_for_the_pass_that_hears_the_pause() -> None:
    cfg = TurnConfig()
    ep = started(cfg)
    ep.expect_words(True)
    _heard_before_the_pause(ep, UNSURE)
    assert _ticks(ep, 2.15) == []  # no guess on words heard before the pause...
    assert ep.partial(1, WHOLE, "", 2.09, 2.15) == []  # ...nor at once when a pass heard them all
    guess = [(s, d) for s, d in _ticks(ep, 3.0, since=2.15) if isinstance(d, Speculate)]
    assert guess == [(_first_tick(cfg.speculate_unsure_ms), Speculate(1, WHOLE, "question"))]


def test_the_rules_alone_guess_words_heard_before_the_pause_after_a_pause() -> None:
    """No words model (Chinese, or not installed): "?" twice in a row is finished by the
    rules, but the recogniser's punctuation is a guess, so a gap between words is not
    enough: the guess waits for a pause."""
    cfg = TurnConfig()
    ep = started(cfg)
    speak_until(ep, 1.95)
    ep.partial(1, "Why are you interested in this?", "", 1.6, 1.7)
    ep.partial(1, WHOLE, "", 1.8, 1.95)
    speak_until(ep, 2.0, start=1.95)
    decisions = _ticks(ep, 3.0)
    assert decisions[0] == (_first_tick(max(cfg.speculate_ahead_ms, cfg.speculate_min_pause_ms)),
                            Speculate(1, WHOLE, "question"))
    assert [s for s, d in decisions if isinstance(d, Endpoint)] == [QUESTION_WAIT]


class _Scripted:
    """A policy that guesses the words at any silence and ends the turn after 0.5 s."""

    def decide(self, ep: Endpointer, turn: OpenTurn, silence: float) -> list[Decision]:
        if not turn.text or silence < 0.03:
            return []
        out: list[Decision] = [Speculate(turn.id, turn.text, "silence")]
        return [*out, Endpoint(turn.id, "silence", silence)] if silence >= 0.5 else out

    def wait(self, ep: Endpointer, turn: OpenTurn) -> None:
        return None


def test_a_policy_decides_and_the_endpointer_keeps_the_rules_of_a_turn() -> None:
    """The seam the benchmark's baselines use: whatever the policy says, the same words are
    guessed once, an endpoint closes the turn, and a noise with no words is discarded."""
    ep = Endpointer(TurnConfig(), policy=_Scripted())
    ep.speech_started(1, 0.5)
    speak_until(ep, 2.0)
    assert ep.partial(1, "Why this role?", "", 2.0, 2.03) == [Speculate(1, "Why this role?", "silence")]
    assert ep.partial(1, "why this role", "", 2.0, 2.1) == []  # the same question: once
    assert ep.wait() is None
    out = ep.tick(2.5)
    assert [type(d) for d in out] == [Endpoint] and ep.turn is None
    ep.speech_started(2, 3.0)
    ep.no_words(2, 3.2)
    assert ep.tick(3.0 + 0.8) == [Discard(2)]  # before the policy is asked


@pytest.mark.parametrize("text", [
    "Could you tell me about", "So, um, why are you looking for a new role?", "When did you start?",
    "Walk me through, um, your most recent code review.", "Tell me about yourself.",
    "We run everything on AWS, how much have you worked with it?", "Is that right",
    "I want to understand how you approach estimating.", "Explain the"])
def test_words_that_ask_or_request_are_read_as_asking_whatever_the_punctuation(text: str) -> None:
    assert started().asks(text) is True
    assert started().asks(text.rstrip("?.")) is True


@pytest.mark.parametrize("text", [
    "We run everything on AWS,", "The role includes on-call.", "Let's talk about testing.",
    "When you joined your current company,", "If the database became slow",
    "Thinking about your last project,",
    "Before we wrap up,", "I noticed on your profile that you wrote a scheduler."])
def test_a_statement_asks_nothing_however_the_recogniser_closed_it(text: str) -> None:
    assert started().asks(text) is False
    assert started().asks(text.rstrip(",.") + "?") is False


@pytest.mark.parametrize(("text", "asks"), [
    ("我们的系统全部部署在云上。", False), ("你能接受吗", True), ("请先简单介绍一下你自己", True),
    ("说说你对微服务的理解。", True), ("进程和线程有什么区别", True), ("这个岗位需要经常出差。", False)])
def test_chinese_asks_by_its_question_words_particles_and_requests(text: str, asks: bool) -> None:
    assert started(language="zh").asks(text) is asks


def test_a_language_whose_words_are_not_listed_says_nothing_either_way() -> None:
    assert started(language="de").asks("Wir nutzen AWS.") is None


def test_a_statement_at_a_pause_holds_the_turn_for_the_long_wait() -> None:
    ep = started()
    speak_until(ep, 2.0)
    ep.partial(1, "The role includes on-call.", "", 2.0, 2.05)
    ep.end_of_turn_scores(1, "The role includes on-call.", 2.0, 2.1, words_logp=-4.0)  # finished words
    t, ended = 2.1, None
    while t < 4.0 and ended is None:
        t = round(t + 0.03, 3)
        ended = next((t for d in ep.tick(t) if isinstance(d, Endpoint)), None)
    assert ended is not None and ended - 2.0 >= TurnConfig().endpoint_incomplete_ms / 1000 - 1e-6


def test_a_partial_that_lags_the_voice_is_not_judged_a_statement() -> None:
    """Its words may stop before the question word: only words heard up to the voice's end
    make a statement (a partial that asks, asks wherever it stops)."""
    ep = started(language="zh")
    speak_until(ep, 2.0)
    ep.partial(1, "如果线上出了故障，", "", 1.4, 2.05)  # decoded up to 1.4 s of a voice to 2.0 s
    turn = ep._turn
    assert turn is not None and ep.cues(turn).asks is None
    ep.partial(1, "如果线上出了故障，", "", 2.0, 2.1)
    assert ep.cues(turn).asks is False
    ep.partial(1, "你会怎么", "", 1.4, 2.15)
    assert ep.cues(turn).asks is True


def test_the_candidates_statements_are_answers_not_preambles() -> None:
    ep = Endpointer(TurnConfig(), "en", questions=False)
    ep.speech_started(1, 0.5)
    speak_until(ep, 2.0)
    ep.partial(1, "I worked at a bank for three years.", "", 2.0, 2.05)
    turn = ep._turn
    assert turn is not None and ep.cues(turn).asks is None
