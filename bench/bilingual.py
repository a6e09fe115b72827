"""Cross-language recall: English questions for Japanese documents and Japanese for English.

    python -m bench.bilingual            # writes the "bilingual" section of bench/RESULTS.md
    python -m bench.bilingual --no-write

Forty short documents on forty different topics of a small company's knowledge base — twenty
written in Japanese, twenty in English — go into one collection. Each is asked about once, in
the *other* language, with a question that paraphrases it (no shared identifiers or names
beyond what a speaker would naturally use). So for every question the nineteen documents in
its own language are distractors that can share its words but not its subject, and the answer
can share no word with it: only meaning finds it. Scored: the right document first (R@1) and
within the first 3, through ``Memory.recall`` (default settings, semantic layer), and in the
same run ``SemanticStore.query`` (by relevance, its default), dense alone
(``SemanticStore.query(rank="meaning")``) and BM25 over the analysed text. Goal: the right
document first for at least 90 % of the questions. The set was written for this benchmark and
is not used for tuning.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.results import machine, publish
from omoide import ManualClock, Memory
from omoide.text.fulltext import analyze

SECTION = "bilingual"
DENSE = 'dense e5-small (SemanticStore.query, rank="meaning")'
TITLE = "## Cross-language recall (bilingual set)"

#: (document id, document, question in the other language)
PAIRS: tuple[tuple[str, str, str], ...] = (
    (
        "vector-search",
        "ベクトル検索は、文章を埋め込みベクトルに変換し、質問のベクトルとのコサイン類似度で"
        "近い文書を探す仕組みです。",
        "How does vector search work?",
    ),
    (
        "expense-deadline",
        "経費精算は毎月25日までに申請してください。領収書の写真の添付が必要です。",
        "By what day of the month must expense claims be submitted?",
    ),
    (
        "vpn-setup",
        "社外から社内システムに接続するには、VPNクライアントをインストールし、"
        "社員番号と二段階認証でログインします。",
        "How do I connect to internal systems when working from outside the office?",
    ),
    (
        "parental-leave",
        "育児休業は子が1歳になるまで取得でき、申請は開始の1か月前までに人事部へ提出します。",
        "How long can parental leave last and when should I apply?",
    ),
    (
        "backup-schedule",
        "本番データベースのバックアップは毎晩2時に取得し、30日間保管します。",
        "When are the production database backups taken and how long are they kept?",
    ),
    (
        "password-policy",
        "パスワードは12文字以上とし、90日ごとに変更する必要はありませんが、漏えいが疑われる"
        "場合は直ちに変更してください。",
        "What are the rules for password length and rotation?",
    ),
    (
        "office-hours",
        "東京オフィスは平日9時から19時まで開いており、土日祝日は入館証が必要です。",
        "What are the opening hours of the Tokyo office?",
    ),
    (
        "incident-severity",
        "障害の重大度はS1からS4の4段階で、S1は全顧客に影響する停止を指し、15分以内に"
        "当番が対応を始めます。",
        "How are outage severity levels defined and how fast must on-call respond to the worst?",
    ),
    (
        "coffee-machine",
        "給湯室のコーヒーマシンは毎週金曜に清掃します。豆は総務部が月初に補充します。",
        "Who refills the coffee beans in the kitchen and when is the machine cleaned?",
    ),
    (
        "code-review",
        "プルリクエストは少なくとも1人の承認が必要で、変更が400行を超える場合は分割を"
        "お願いします。",
        "How many approvals does a pull request need, and what if the change is very large?",
    ),
    (
        "travel-booking",
        "出張の航空券とホテルは社内の出張手配システムで予約し、部長の承認を得てください。",
        "Where do I book flights and hotels for business trips?",
    ),
    (
        "onboarding-laptop",
        "新入社員のノートパソコンは入社日の朝に情報システム部から受け取ります。",
        "When and from whom does a new hire receive their laptop?",
    ),
    (
        "release-freeze",
        "年末年始の12月25日から1月5日までは本番環境へのリリースを凍結します。",
        "Is there a period at the end of the year when we cannot deploy to production?",
    ),
    (
        "customer-refund",
        "返金は購入から14日以内であれば理由を問わず受け付け、元の支払方法に返金します。",
        "Within how many days can a customer get their money back?",
    ),
    (
        "meeting-rooms",
        "会議室は社内カレンダーで予約し、使わなくなった予約は必ず取り消してください。",
        "How do I reserve a conference room?",
    ),
    (
        "translation-style",
        "英語から日本語への翻訳では、です・ます調で統一し、製品名はカタカナにしません。",
        "What style should translations into Japanese follow?",
    ),
    (
        "data-retention",
        "顧客の個人データは契約終了後3年で削除します。ログは1年で匿名化します。",
        "How long do we keep customer personal data after a contract ends?",
    ),
    (
        "security-badge",
        "入館証を紛失した場合は、すぐに総務部に連絡し、再発行手数料として千円を支払います。",
        "What should I do if I lose my building pass?",
    ),
    (
        "api-rate-limit",
        "公開APIは1つのキーにつき毎分600リクエストまでで、超えると429を返します。",
        "How many requests per minute does the public API allow before throttling?",
    ),
    (
        "holiday-party",
        "忘年会は12月の第2金曜日に開催し、参加費は会社が全額負担します。",
        "When is the year-end party and who pays for it?",
    ),
    (
        "printer-jam",
        "When the third-floor printer jams, open the side panel, remove the paper, and never "
        "pull it out from the front tray.",
        "3階のプリンターで紙が詰まったらどうすればいいですか？",
    ),
    (
        "sales-commission",
        "Sales staff earn a five percent commission on every contract signed in the quarter, "
        "paid with the following month's salary.",
        "営業の歩合はどのように計算され、いつ支払われますか？",
    ),
    (
        "remote-work",
        "Employees may work from home up to three days a week, as agreed with their manager.",
        "在宅勤務は週に何日まで認められていますか？",
    ),
    (
        "kubernetes-upgrade",
        "The Kubernetes clusters are upgraded one minor version at a time, staging first, and "
        "production a week later.",
        "クラスタのバージョンアップはどの順番で行いますか？",
    ),
    (
        "invoice-format",
        "Invoices must include our registration number, the tax rate for each line, and be "
        "sent as PDF.",
        "請求書に記載しなければならない項目は何ですか？",
    ),
    (
        "bike-parking",
        "Bicycles can be parked in the basement; register your bike with reception to get a "
        "sticker.",
        "自転車通勤の場合、どこに停めればよいですか？",
    ),
    (
        "health-checkup",
        "The annual health checkup is mandatory and takes place in June at the partner clinic "
        "near the station.",
        "年に一度の健康診断はいつどこで受けますか？",
    ),
    (
        "feature-flags",
        "New features ship behind feature flags, which are removed within two sprints after a "
        "full rollout.",
        "新機能を段階的に公開する仕組みと、その後の片付けについて教えてください。",
    ),
    (
        "gift-policy",
        "Gifts from suppliers worth more than 5,000 yen must be declared to compliance.",
        "取引先からの贈り物について、申告が必要になる金額の基準は？",
    ),
    (
        "error-budget",
        "Each service has a monthly error budget of 0.1 percent; when it is spent, feature "
        "work stops until reliability improves.",
        "信頼性の目標を使い切ったら開発はどうなりますか？",
    ),
    (
        "lunch-subsidy",
        "The company pays half of the lunch bill at the cafeteria, up to 400 yen a day.",
        "社員食堂の昼食代は会社がどれくらい補助してくれますか？",
    ),
    (
        "git-branching",
        "We branch from main for every change and delete the branch after it is merged; "
        "long-lived branches are not allowed.",
        "ブランチの運用ルールはどうなっていますか？",
    ),
    (
        "earthquake-drill",
        "In an earthquake, take cover under a desk, then gather in the park across the street "
        "once the shaking stops.",
        "地震が起きたらどう行動し、どこに集合しますか？",
    ),
    (
        "customer-nps",
        "Customer satisfaction is measured every quarter with a survey; the target net "
        "promoter score is forty.",
        "顧客満足度はどのくらいの頻度で測り、目標値はいくつですか？",
    ),
    (
        "laptop-encryption",
        "All company laptops must have full-disk encryption turned on before they leave the "
        "office.",
        "会社のパソコンを持ち出す前に必要な設定は何ですか？",
    ),
    (
        "training-budget",
        "Every engineer has a yearly budget of 100,000 yen for books, courses and conferences.",
        "技術書や研修に使える年間の予算はいくらですか？",
    ),
    (
        "status-page",
        "During an outage, the incident lead posts an update on the public status page every "
        "thirty minutes.",
        "障害中、外部向けの状況報告はどのくらいの間隔で更新しますか？",
    ),
    (
        "visitor-policy",
        "Visitors sign in at reception, wear a guest badge, and are accompanied by their host "
        "at all times.",
        "来客が来たときの受付の手順を教えてください。",
    ),
    (
        "oncall-compensation",
        "Engineers on call receive an allowance of 3,000 yen per night and a day off after a "
        "weekend shift.",
        "夜間の当番にはどんな手当がありますか？",
    ),
    (
        "font-license",
        "Only fonts from the approved list may be used in marketing material, because their "
        "licences cover commercial print.",
        "販促物で使ってよい書体は決まっていますか？",
    ),
)


def bm25_order(question: str, documents: Sequence[str]) -> list[int]:
    from rank_bm25 import BM25Okapi

    bm25 = BM25Okapi([analyze(d) or ["-"] for d in documents])
    scores = bm25.get_scores(analyze(question))
    return sorted(range(len(documents)), key=lambda i: -scores[i])


def run() -> dict[str, list[int]]:
    """The rank (0 = first, 99 = not returned) of the right document for each retriever."""
    ranks: dict[str, list[int]] = {
        n: [] for n in ("Memory.recall", "SemanticStore.query", DENSE, "BM25")
    }
    ids = [p[0] for p in PAIRS]
    docs = [p[1] for p in PAIRS]
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp), clock=ManualClock()) as mem:
        mem.semantic.store("knowledge", docs, ids=ids, agent_name="kb")
        for i, (doc_id, _, question) in enumerate(PAIRS):
            got = [
                x.split("/", 1)[1] for x in mem.recall(question, agent_name="kb").ids("semantic")
            ]
            ranks["Memory.recall"].append(got.index(doc_id) if doc_id in got else 99)
            hits = [h.doc_id for h in mem.semantic.query("knowledge", question, n_results=10)]
            ranks["SemanticStore.query"].append(hits.index(doc_id) if doc_id in hits else 99)
            hits = [
                h.doc_id
                for h in mem.semantic.query("knowledge", question, n_results=10, rank="meaning")
            ]
            ranks[DENSE].append(hits.index(doc_id) if doc_id in hits else 99)
            ranks["BM25"].append(bm25_order(question, docs).index(i))
    return ranks


def report(ranks: dict[str, list[int]]) -> str:
    rows = [
        "| retriever | right document first | within 3 | questions |",
        "|---|---|---|---|",
    ]
    for name, values in ranks.items():
        r1 = 100 * statistics.fmean(r == 0 for r in values)
        r3 = 100 * statistics.fmean(r < 3 for r in values)
        rows.append(f"| {name} | {r1:.1f} | {r3:.1f} | {len(values)} |")
    return (
        f"{TITLE}\n\n{len(PAIRS)} questions, each in the other language than its document "
        "(20 English questions for Japanese documents, 20 Japanese for English), all 40 "
        f"documents in one collection; default settings. Goal: first ≥ 90 %. {machine()}\n\n"
        + "\n".join(rows)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args(argv)
    text = report(run())
    publish(SECTION, text, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
