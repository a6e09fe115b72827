"""Words across languages: the bundled JMdict word list and what it lends recall."""

from __future__ import annotations

from pathlib import Path

from omoide import ManualClock, Memory
from omoide.text.lexicon import cross_share, japanese_words, translated_alike
from omoide.text.relevance import writing, written_alike


def test_japanese_is_split_into_the_longest_words_the_list_knows() -> None:
    words = japanese_words("夜のシフトの申し送りについて、現場の責任者から何と言われた？")
    assert {"夜", "シフト", "現場", "責任者"} <= set(words)
    # Particles and endings written in hiragana alone are not words of a question.
    assert "の" not in words and "について" not in words


def test_a_japanese_question_holds_the_english_words_of_its_answer() -> None:
    question = "夜のシフトの申し送りについて、現場の責任者から何と言われた？"
    answer = "Site manager's view on night shift handover: leave a printed list, please."
    assert cross_share(question, answer) >= 0.4
    assert cross_share(question, "Freight bill BL-2256 settled: ¥714,000.") == 0.0


def test_an_english_question_holds_the_japanese_words_of_its_answer() -> None:
    question = "How do I reserve a conference room?"
    answer = "会議室は社内ポータルから予約してください。"
    # "conference" and "room" (会議室); "reserve" is not "reservation" (予約) to it.
    assert cross_share(question, answer) == 2 / 3
    assert cross_share(question, "経費精算は翌月5日までに提出してください。") == 0.0


def test_words_match_whole_and_inflected() -> None:
    """A Japanese word is looked for as a word of the text, not inside a longer one: "pass"
    (パス) is not in パスワード; English words compare without their inflection (書体 is
    glossed "typeface", the text says "typefaces")."""
    assert cross_share("What should I do if I lose my pass?", "パスワードを変更する。") == 0.0
    assert cross_share("書体は？", "Only typefaces from the approved list may be used.") == 1.0


def test_two_texts_are_translated_alike_when_either_holds_a_word_of_the_other() -> None:
    """Either way round: 点呼 is "roll call", and 時間外 holds no word of "Overtime cap" but 月
    is the "month" of "per month"."""
    roll_call = "ドライバー各位、点呼の開始は06:45です。"
    assert translated_alike(roll_call, "Drivers: the roll call now begins at 07:15.")
    assert translated_alike("Overtime cap: 36h per month", "時間外は月45hまで。")
    assert not translated_alike(roll_call, "Same-day parcels must be handed over by 16:30.")
    assert not translated_alike("会議室の予約", "会議室は予約制です。")


def test_a_loanword_is_known_whether_or_not_it_is_common() -> None:
    """デプロイ is no common word of JMdict's; the list keeps loanwords all the same, and its
    gloss "deploying" stands for "deploys" either way round."""
    assert "デプロイ" in japanese_words("本番デプロイはいつ？")
    english = "Production deploys are allowed on Tuesday mornings."
    assert cross_share("デプロイはいつ？", english) == 1.0
    assert cross_share("When are deploys allowed?", "デプロイは火曜日の朝だけ。") > 0
    # ...and a shorter word left by taking an inflection off is no gloss: "times" is not "tim".
    assert cross_share("何時？", "Tim is on call.") == 0.0


def test_a_compound_written_open_holds_the_closed_one() -> None:
    """ロールバック is glossed "rollback": a text writing "roll back" holds it."""
    assert cross_share("ロールバック", "How do we roll back a release?") == 1.0
    assert cross_share("ロールバック", "Roll the dice, back to square one.") == 0.0


def test_a_hyphenated_compound_is_translated_by_its_parts() -> None:
    """The list knows words, not compounds: "check-in" asks for what "check in" does, and its
    form as one word ("checkin") is no further word the answer must translate."""
    answer = "ドライバーの朝の点呼は06:45開始。"
    share = cross_share("When is the morning check in for drivers?", answer)
    assert share > 0
    assert cross_share("When is the morning check-in for drivers?", answer) == share


def test_texts_in_one_language_are_not_matched_through_the_list() -> None:
    assert cross_share("会議室の予約", "会議室は予約制です。") == 0.0
    assert cross_share("room booking", "Rooms are booked online.") == 0.0


def test_two_texts_are_in_one_language_when_each_writes_the_other_s_main_script() -> None:
    """A Japanese sentence naming a Latin room code is not in English's language (English
    holds none of its Japanese); two texts mixing both scripts are in one."""
    japanese = writing("来週以降、運行会議はroom C-310でやります。")
    english = writing("Reminder: the weekly ops sync is in room B-204.")
    assert japanese.main == {"cjk"} and english.main == {"latin"}
    assert not written_alike(japanese, english)
    assert written_alike(japanese, writing("定例会議は月曜日です。"))
    mixed = writing("supportの決定: Q2 on-callは「a weekly rotation of four people」とする。")
    assert written_alike(mixed, writing("決定: サポートは4 hours以内に顧客へ返信する。"))
    assert written_alike(writing("12:30"), english)


def test_a_sentence_with_hiragana_is_japanese_however_long_its_english_names() -> None:
    """Hiragana is Japanese grammar: a Japanese sentence whose English names take more
    letters than its Japanese is in Japanese's language, not in English's."""
    named = writing("検討の結果、PO#5265はKaede Packagingへ発注します。")
    assert named.main == {"cjk"}
    assert written_alike(named, writing("本日の出荷予定、計画どおり進行中。"))
    assert not written_alike(
        named, writing("Decision on PO#2052: the order goes to Kaede Packaging.")
    )
    quoted = writing("supportの決定: Q2 on-callは「a weekly rotation of four people」とする。")
    assert quoted.main == {"cjk"}
    # no hiragana: the script most of its letters are in
    assert writing("The 倉庫管理システム is down").main == {"latin"}


def test_recall_finds_the_answer_in_the_other_language_by_its_words(tmp_path: Path) -> None:
    """An English question for a Japanese knowledge base: the document holding the
    translations of its words comes first, and they are its words signal."""
    docs = {
        "rooms": "会議室は社内ポータルから予約し、使い終わったらホワイトボードを消してください。",
        "expenses": "経費精算は翌月5日までに領収書を添えて提出してください。",
        "printer": "3階のプリンターで紙が詰まったら、総務部に連絡してください。",
        "badge": "入館証を紛失した場合は、すぐに総務部に連絡してください。",
    }
    with Memory(tmp_path, clock=ManualClock()) as mem:
        mem.semantic.store("knowledge", list(docs.values()), ids=list(docs), agent_name="kb")
        first = mem.recall("Where do I book a conference room?", agent_name="kb").items[0]
        assert first.id == "knowledge/rooms"
        assert first.signals["words"] >= 0.5
        words = {
            i.id: i.signals["words"]
            for i in mem.recall("Who do I tell when the printer jams?", agent_name="kb").items
        }
        assert words["knowledge/printer"] > words.get("knowledge/expenses", 0.0)
