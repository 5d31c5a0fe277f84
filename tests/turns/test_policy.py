"""The end-of-turn policy with plain numbers, and the endpointer driven by its signals."""

from __future__ import annotations

from app.core.config import TurnConfig
from app.turns.endpointer import Endpoint, Endpointer, Speculate
from app.turns.policy import Evidence, TextCues, decide

SCALE = {"words_complete_logp": -10.0, "words_incomplete_logp": -16.0}
"""The policy's arithmetic on the scale its numbers here were written on (zero-shot log P:
-4 finished, -20 cut); the shipped thresholds meet the trained head in tests/turns/test_head.py."""
CFG = TurnConfig(**SCALE)


def test_confident_complete_ends_after_a_short_silence() -> None:
    wait = decide(CFG, TextCues(), Evidence(words_logp=-4.0))
    assert (wait.verdict, wait.endpoint_ms, wait.speculate_ms) == ("complete", 250, 90)


def test_confident_incomplete_waits_long_and_guesses_late() -> None:
    wait = decide(CFG, TextCues(), Evidence(words_logp=-20.0))
    assert (wait.verdict, wait.endpoint_ms, wait.speculate_ms) == ("incomplete", 1200, 600)


def test_uncertain_words_get_the_middle_wait() -> None:
    wait = decide(CFG, TextCues(), Evidence(words_logp=-13.0))
    assert (wait.verdict, wait.endpoint_ms, wait.score) == ("uncertain", 600, 0.0)


def test_a_question_mark_adds_half_a_vote_to_the_words() -> None:
    assert decide(CFG, TextCues(question=True), Evidence(words_logp=-11.5)).verdict == "complete"
    assert decide(CFG, TextCues(), Evidence(words_logp=-11.5)).verdict == "uncertain"


def test_unsure_signals_never_wait_longer_than_the_rules_would() -> None:
    # "?" twice in a row ends the turn after 400 ms by the rules; words that are only
    # unsure about it do not stretch that to the middle wait (they may only shorten it)...
    twice = TextCues(question=True, question_streak=2)
    wait = decide(CFG, twice, Evidence(words_logp=-12.5))
    assert (wait.verdict, wait.endpoint_ms, wait.speculate_ms) == ("uncertain", 400, CFG.speculate_unsure_ms)
    once = TextCues(question=True, question_streak=1)
    assert decide(CFG, once, Evidence(words_logp=-12.5)).endpoint_ms == 600
    # the speaker's own longer pauses still stretch it, and without the streak nothing changes
    assert decide(CFG, twice, Evidence(words_logp=-12.5), learned_pause_ms=560).endpoint_ms == 700
    assert decide(CFG, TextCues(), Evidence(words_logp=-20.0)).endpoint_ms == 1200


def test_signals_that_lean_unfinished_are_not_cut_short_by_the_recognisers_question_mark() -> None:
    # "Could you tell me about?": the recogniser closed the clause; the words model doubts it
    twice = TextCues(question=True, question_streak=2, asks=True)
    leaning = decide(CFG, twice, Evidence(words_logp=-15.0))
    assert (leaning.verdict, leaning.endpoint_ms) == ("uncertain", CFG.endpoint_uncertain_ms)
    assert decide(CFG, twice, Evidence(words_logp=-15.0, guess_confirmed=True)).endpoint_ms == 600
    # called unfinished: unfinished, whatever the "?" and the question form say
    called = decide(CFG, twice, Evidence(words_logp=-20.0, guess_confirmed=True))
    assert (called.verdict, called.endpoint_ms) == ("incomplete", CFG.endpoint_incomplete_ms)
    # a tag finishes a question by itself
    assert decide(CFG, TextCues(tag=True), Evidence(words_logp=-20.0)).verdict != "incomplete"


def test_a_statement_waits_longer_than_a_question_however_finished_it_sounds() -> None:
    statement = TextCues(asks=False)
    for evidence in (Evidence(words_logp=-4.0), Evidence(words_logp=-4.0, guess_confirmed=True), Evidence()):
        wait = decide(CFG, statement, evidence)
        assert (wait.verdict, wait.endpoint_ms) == ("incomplete", CFG.endpoint_incomplete_ms)
    assert decide(CFG, TextCues(asks=True), Evidence(words_logp=-4.0)).endpoint_ms == CFG.endpoint_complete_ms
    # a question asked by its intonation alone, "?" pass after pass, is no statement
    rising = decide(CFG, TextCues(asks=False, question=True, question_streak=2), Evidence())
    assert (rising.verdict, rising.endpoint_ms) == ("complete", CFG.endpoint_question_silence_ms)
    once = decide(CFG, TextCues(asks=False, question=True, question_streak=1), Evidence())
    assert once.endpoint_ms == CFG.endpoint_incomplete_ms
    # a language whose words are not read (asks None) keeps the signals' verdict
    assert decide(CFG, TextCues(), Evidence(words_logp=-4.0)).endpoint_ms == CFG.endpoint_complete_ms


def test_the_question_form_not_the_question_mark_is_the_words_half_vote() -> None:
    unsure = Evidence(words_logp=-11.5)
    assert decide(CFG, TextCues(question=False, asks=True), unsure).verdict == "complete"
    assert decide(CFG, TextCues(question=True, asks=False), unsure).verdict == "incomplete"


def test_only_words_called_finished_are_guessed_inside_a_pause_between_words() -> None:
    # "What is your biggest?" in a 180 ms gap before "weakness": the "?" alone is no
    # reason to guess before the pause outlasts one between words...
    unsure = decide(CFG, TextCues(question=True), Evidence(words_logp=-14.0))
    assert (unsure.verdict, unsure.speculate_ms) == ("uncertain", CFG.speculate_unsure_ms)
    # ...words the model calls finished are guessed once the voice paused for the hangover,
    # sooner than words finished by the punctuation alone, which wait out a gap between words
    finished = decide(CFG, TextCues(question=True), Evidence(words_logp=-8.0))
    assert (finished.verdict, finished.speculate_ms) == ("complete", CFG.speculate_finished_ms)
    by_rules = decide(CFG, TextCues(question=True, question_streak=2), Evidence())
    assert (by_rules.verdict, by_rules.speculate_ms) == ("complete", CFG.speculate_min_pause_ms)
    assert CFG.speculate_finished_ms < CFG.speculate_min_pause_ms
    # the setting is the dial: 150 guesses the unsure as early as the finished
    early = CFG.model_copy(update={"speculate_unsure_ms": 150})
    assert decide(early, TextCues(question=True), Evidence(words_logp=-14.0)).speculate_ms == 150
    # never later than the endpoint itself
    short = CFG.model_copy(update={"endpoint_uncertain_ms": 200, "speculate_unsure_ms": 300})
    assert decide(short, TextCues(question=True), Evidence(words_logp=-14.0)).speculate_ms == 200


def test_without_a_model_words_nothing_calls_finished_wait_out_a_gap_between_words() -> None:
    """No "?", question word or tag and no model verdict: a guess waits
    ``speculate_silence_ms`` (decision 0023), as it does while the words model is still
    scoring such words; a "?" or a tag is guessed after a pause."""
    assert decide(CFG, TextCues(), Evidence()).speculate_ms == CFG.speculate_silence_ms
    assert decide(CFG, TextCues(), Evidence(words_pending=True)).speculate_ms == CFG.speculate_silence_ms
    once = TextCues(question=True, question_streak=1)
    assert decide(CFG, once, Evidence()).speculate_ms == CFG.speculate_min_pause_ms
    assert decide(CFG, TextCues(tag=True), Evidence()).speculate_ms == CFG.speculate_min_pause_ms
    assert CFG.speculate_min_pause_ms < CFG.speculate_silence_ms


def test_a_tag_outweighs_doubtful_words() -> None:
    assert decide(CFG, TextCues(tag=True), Evidence(words_logp=-13.0)).verdict == "complete"


def test_a_trailing_conjunction_overrides_confident_words() -> None:
    wait = decide(CFG, TextCues(trailing=True), Evidence(words_logp=-2.0))
    assert (wait.verdict, wait.endpoint_ms, wait.speculate_ms) == ("thinking", 1500, 900)


def test_signals_missing_means_todays_rules() -> None:
    assert decide(CFG, TextCues(), Evidence()).endpoint_ms == 800
    assert decide(CFG, TextCues(question=True, question_streak=1), Evidence()).endpoint_ms == 800
    rules = decide(CFG, TextCues(question=True, question_streak=2), Evidence())
    assert (rules.verdict, rules.endpoint_ms, rules.score) == ("complete", 400, None)


def test_sound_is_half_a_vote_and_off_at_weight_zero() -> None:
    assert decide(CFG, TextCues(), Evidence(words_logp=-13.0, sound_p=1.0)).score == 0.5
    assert decide(CFG, TextCues(), Evidence(words_logp=-10.0, sound_p=0.0)).verdict == "uncertain"
    off = TurnConfig(smart_turn_weight=0.0)
    assert decide(off, TextCues(), Evidence(sound_p=1.0)).score is None  # rules: no model spoke


def test_learned_pauses_stretch_only_the_middle_wait() -> None:
    assert decide(CFG, TextCues(), Evidence(words_logp=-13.0), learned_pause_ms=700).endpoint_ms == 875
    assert decide(CFG, TextCues(), Evidence(words_logp=-13.0), learned_pause_ms=3000).endpoint_ms == 1200
    assert decide(CFG, TextCues(), Evidence(words_logp=-13.0), learned_pause_ms=200).endpoint_ms == 600
    assert decide(CFG, TextCues(), Evidence(words_logp=-4.0), learned_pause_ms=700).endpoint_ms == 250


# --- the endpointer with signals -----------------------------------------------------------


def started(cfg: TurnConfig = CFG, language: str = "en") -> Endpointer:
    ep = Endpointer(cfg, language)
    ep.speech_started(1, 0.5)
    return ep


def speak_until(ep: Endpointer, t_end: float, start: float = 0.5) -> None:
    t = start
    while t < t_end - 1e-9:
        t = min(round(t + 0.03, 3), t_end)
        ep.voiced(t)
        ep.tick(t)


def test_the_first_current_partial_after_the_pause_is_the_guess_then_words_end_it_at_250_ms() -> None:
    ep = started()
    speak_until(ep, 2.0)
    text = "Describe your ideal working environment."
    assert ep.partial(1, text, "", 2.0, 2.1) == []  # 100 ms: maybe a gap between words
    assert ep.tick(2.16) == []  # no "?" and no verdict yet: maybe a longer gap between words
    guess = ep.end_of_turn_scores(1, text, 2.0, 2.2, words_logp=-5.0)  # called finished: now
    assert [(type(d), d.text) for d in guess] == [(Speculate, text)]  # type: ignore[union-attr]
    out = ep.tick(2.25)
    assert out == [Endpoint(1, "question", out[0].silence)]  # type: ignore[union-attr]


def test_a_late_confident_score_ends_the_turn_when_it_arrives() -> None:
    ep = started()
    speak_until(ep, 2.0)
    ep.partial(1, "Why do you want this job", "", 2.0, 2.2)
    assert not any(isinstance(d, Endpoint) for d in ep.tick(2.4))
    out = ep.end_of_turn_scores(1, "why do you want this job?", 2.0, 2.42, words_logp=-3.0)  # same words
    assert [type(d) for d in out] == [Endpoint]


def test_words_that_say_unfinished_hold_the_turn_and_guess_late() -> None:
    ep = started()
    speak_until(ep, 2.0)
    ep.partial(1, "What is the difference between", "", 2.0, 2.1)
    ep.end_of_turn_scores(1, "What is the difference between", 2.0, 2.1, words_logp=-22.0)
    assert ep.tick(2.55) == []
    assert [d.reason for d in ep.tick(2.6)] == ["silence"]  # type: ignore[union-attr]  # 1200 - 600 ms
    assert ep.tick(3.15) == []
    assert isinstance(ep.tick(3.2)[0], Endpoint)


def test_a_score_for_older_words_is_not_used() -> None:
    ep = started()
    speak_until(ep, 2.0)
    ep.partial(1, "Tell me about your last project", "", 2.0, 2.1)
    ep.end_of_turn_scores(1, "Tell me about your last", 1.8, 2.1, words_logp=-2.0)
    assert not any(isinstance(d, Endpoint) for d in ep.tick(2.6))  # rules: 800 ms
    assert any(isinstance(d, Endpoint) for d in ep.tick(2.8))


def test_sound_counts_only_for_audio_without_newer_voice() -> None:
    cfg = TurnConfig(smart_turn_weight=2.0)
    ep = started(cfg)
    speak_until(ep, 2.0)
    ep.partial(1, "Tell me about your last project", "", 2.0, 2.1)
    ep.end_of_turn_scores(1, "Tell me about your last project", 1.5, 2.1, sound_p=1.0)  # older audio
    assert not any(isinstance(d, Endpoint) for d in ep.tick(2.3))
    out = ep.end_of_turn_scores(1, "Tell me about your last project", 2.0, 2.31, sound_p=1.0)
    assert any(isinstance(d, Endpoint) for d in out)


def test_chinese_uses_the_same_rules_with_its_own_words() -> None:
    ep = started(language="zh")
    speak_until(ep, 2.0)
    ep.partial(1, "你用过 Kubernetes 吗", "", 2.0, 2.1)  # a final particle: question-like
    ep.partial(1, "你用过 Kubernetes 吗", "", 2.0, 2.12)
    assert any(isinstance(d, Endpoint) and d.reason == "question" for d in ep.tick(2.4))
    ep.speech_started(2, 3.0)
    speak_until(ep, 4.0, start=3.0)
    ep.partial(2, "我想了解一下你的项目然后", "", 4.0, 4.1)  # trails off: a thinking pause
    assert not any(isinstance(d, Endpoint) for d in ep.tick(5.45))
    assert any(isinstance(d, Endpoint) for d in ep.tick(5.5))


def test_chinese_question_word_and_particle_feed_the_votes() -> None:
    ep = started(language="zh")
    speak_until(ep, 2.0)
    ep.partial(1, "你为什么想加入我们公司", "", 2.0, 2.1)
    wait = ep.wait()
    assert wait is not None and wait.score is None  # no model signal for Chinese: rules
    ep.end_of_turn_scores(1, "你为什么想加入我们公司", 2.0, 2.1, words_logp=-13.0)
    wait = ep.wait()
    assert wait is not None and wait.score == 0.5  # the question word: half a vote


def test_the_interviewers_own_pauses_stretch_the_unsure_wait() -> None:
    ep = started()
    speak_until(ep, 2.0)
    speak_until(ep, 3.0, start=2.7)  # a 0.7 s pause inside the question, then more words
    ep.partial(1, "Tell me about a time you failed", "", 3.0, 3.1)
    ep.end_of_turn_scores(1, "Tell me about a time you failed", 3.0, 3.1, words_logp=-13.0)
    wait = ep.wait()
    assert wait is not None and 860 <= wait.endpoint_ms <= 880  # 1.25 x ~0.7 s
    assert not any(isinstance(d, Endpoint) for d in ep.tick(3.8))
    assert any(isinstance(d, Endpoint) for d in ep.tick(3.9))


def test_while_the_words_are_being_scored_the_guess_waits_for_them() -> None:
    pending = decide(CFG, TextCues(), Evidence(words_pending=True))
    assert (pending.endpoint_ms, pending.speculate_ms) == (800, 250)
    # a "?" waits for the verdict too (up to the unsure wait); a tag, finished by
    # itself, does not
    asked = decide(CFG, TextCues(question=True), Evidence(words_pending=True))
    assert (asked.endpoint_ms, asked.speculate_ms) == (800, CFG.speculate_unsure_ms)
    tagged = decide(CFG, TextCues(tag=True, question=True), Evidence(words_pending=True))
    assert tagged.speculate_ms == CFG.speculate_min_pause_ms
    ep = started()
    ep.expect_words(True)
    speak_until(ep, 2.0)
    assert ep.partial(1, "Why are you", "", 2.0, 2.1) == []
    assert ep.tick(2.2) == []  # 200 ms into a pause, the model not heard yet: no guess
    # unfinished: still none
    assert ep.end_of_turn_scores(1, "Why are you", 2.0, 2.21, words_logp=-19.0) == []
    assert ep.tick(2.5) == []
    speak_until(ep, 3.0, start=2.5)
    text = "Why are you interested in this role?"
    ep.partial(1, text, "", 3.0, 3.12)
    out = ep.end_of_turn_scores(1, text, 3.0, 3.16, words_logp=-4.0)
    assert out == [Speculate(1, text, "question")]  # the verdict came: guess at once
    assert isinstance(ep.tick(3.25)[0], Endpoint)


def test_a_quick_partial_inside_a_pause_between_words_is_not_guessed_unless_called_finished() -> None:
    # A fast recogniser hears "What is your biggest?" 160 ms into a 200 ms gap before
    # "weakness?": unsure words wait for a pause longer than one between words...
    ep = started()
    ep.expect_words(True)
    speak_until(ep, 2.0)
    assert ep.partial(1, "What is your biggest?", "", 2.0, 2.16) == []
    assert ep.end_of_turn_scores(1, "What is your biggest?", 2.0, 2.17, words_logp=-14.0) == []
    assert ep.tick(2.19) == []
    speak_until(ep, 2.6, start=2.2)  # ...and the question went on: no request was wasted
    text = "What is your biggest weakness?"
    assert ep.partial(1, text, "", 2.6, 2.76) == []  # still being scored
    # ...while words the model calls finished are guessed the moment the verdict lands
    assert ep.end_of_turn_scores(1, text, 2.6, 2.78, words_logp=-6.0) == [Speculate(1, text, "question")]


def test_only_finished_words_may_be_guessed_before_a_pass_heard_the_pause() -> None:
    """``ahead_ms``: words heard before the voice stopped are guessed at the pause only
    when they are finished; by the words model at once, by weaker evidence after a pause."""
    pause = max(CFG.speculate_ahead_ms, CFG.speculate_min_pause_ms)
    finished = CFG.words_complete_logp + 1.0
    assert decide(CFG, TextCues(), Evidence(words_logp=finished)).ahead_ms == CFG.speculate_ahead_ms
    heard = TurnConfig(smart_turn_weight=2.0)  # the sound alone calls it finished
    assert decide(heard, TextCues(), Evidence(sound_p=1.0)).ahead_ms == pause
    twice = TextCues(question=True, question_streak=2)  # the rules' "?" twice in a row
    assert decide(CFG, twice, Evidence()).ahead_ms == pause
    # unsure, unfinished, a thinking pause, or the words model still scoring: no
    unsure = (CFG.words_complete_logp + CFG.words_incomplete_logp) / 2
    assert decide(CFG, TextCues(), Evidence(words_logp=unsure)).ahead_ms is None
    assert decide(CFG, TextCues(), Evidence(words_logp=CFG.words_incomplete_logp - 1)).ahead_ms is None
    assert decide(CFG, TextCues(trailing=True), Evidence(words_logp=finished)).ahead_ms is None
    assert decide(CFG, twice, Evidence(words_pending=True)).ahead_ms is None
    assert decide(CFG, TextCues(question=True, question_streak=1), Evidence()).ahead_ms is None
