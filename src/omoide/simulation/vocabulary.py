"""The fleet scenario's world: its changing facts, systems, symptoms and fixes, topics,
feedback and routine chatter, in English and Japanese (the templates events are made from)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "FACTS",
    "FEEDBACK",
    "FIXES",
    "ROUTINE_EN",
    "ROUTINE_JA",
    "SYMPTOMS",
    "SYSTEMS",
    "SYSTEMS_JA",
    "TOPICS",
    "Fact",
]


@dataclass(frozen=True)
class Fact:
    subject: str
    owner: str
    values: tuple[str, ...]
    en: str  # statement template with {value}
    ja: str
    ask_en: str
    ask_ja: str


FACTS: tuple[Fact, ...] = (
    Fact(
        "pricing.pro_plan",
        "ceo",
        ("¥500", "¥800", "¥1,200", "¥980"),
        "Decision: the Pro plan price is {value} per month.",
        "決定: Proプランの価格は月額{value}とする。",
        "What is the current price of the Pro plan?",
        "Proプランの今の価格はいくら？",
    ),
    Fact(
        "dependency.yaml_parser",
        "cto",
        ("approved", "banned", "approved with pinning"),
        "Decision: the fastyaml parser dependency is {value} for production use.",
        "決定: 依存パッケージfastyamlの本番利用は「{value}」。",
        "Is the fastyaml dependency allowed in production?",
        "fastyamlは本番で使ってよい？",
    ),
    Fact(
        "policy.deploy_window",
        "devops",
        ("Tuesday and Thursday mornings", "any weekday before 15:00", "Monday to Wednesday only"),
        "Decision: production deploys are allowed on {value}.",
        "決定: 本番デプロイは{value}に限り許可する。",
        "When are production deploys allowed?",
        "本番デプロイはいつ許可されている？",
    ),
    Fact(
        "tooling.ci",
        "cto",
        ("GitHub Actions", "Buildkite", "GitLab CI"),
        "Decision: our CI system is {value}.",
        "決定: CIシステムは{value}を使う。",
        "Which CI system do we use?",
        "CIは何を使っている？",
    ),
    Fact(
        "brand.primary_colour",
        "designer",
        ("indigo", "teal", "crimson"),
        "Decision: the primary brand colour is {value}.",
        "決定: ブランドのメインカラーは{value}。",
        "What is our primary brand colour?",
        "ブランドのメインカラーは？",
    ),
    Fact(
        "support.response_target",
        "support",
        ("2 hours", "4 hours", "30 minutes"),
        "Decision: support must answer customers within {value}.",
        "決定: サポートは{value}以内に顧客へ返信する。",
        "What is the support response-time target?",
        "サポートの返信目標時間は？",
    ),
)

SYSTEMS = (
    "checkout API",
    "login service",
    "search index",
    "billing job",
    "mobile build",
    "image CDN",
    "email sender",
    "analytics pipeline",
    "webhook relay",
    "cache cluster",
)
SYSTEMS_JA = (
    "決済API",
    "ログインサービス",
    "検索インデックス",
    "請求バッチ",
    "モバイルビルド",
    "画像CDN",
    "メール送信",
    "分析パイプライン",
    "Webhook中継",
    "キャッシュクラスタ",
)
SYMPTOMS = (
    "returned 502 errors",
    "timed out under load",
    "ran out of memory",
    "failed after a config change",
    "dropped messages",
)
FIXES = (
    "rotated the expired TLS certificate",
    "raised the connection pool to 200",
    "rolled back the config to the previous release",
    "added a retry with backoff",
    "moved the job to a larger instance",
    "fixed a missing DATABASE_URL",
    "pinned the client library to 2.3.1",
    "cleared the poisoned cache keys",
)
TOPICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Q{q} priority", ("security before performance", "performance before new features")),
    ("Q{q} hiring", ("two backend engineers", "one designer and one QA engineer")),
    ("Q{q} launch market", ("Japan first, then the US", "the US and Europe together")),
    ("Q{q} blog cadence", ("two articles a week", "one long article a month")),
    ("Q{q} on-call", ("a weekly rotation of four people", "follow-the-sun with two regions")),
    ("Q{q} budget", ("a 10% cut to ads", "doubling the events budget")),
)
FEEDBACK = (
    ("reply tone", "keep replies to customers short and polite"),
    ("pricing", "never offer discounts above 20%"),
    ("reports", "send the weekly report on Monday mornings"),
    ("design", "avoid stock photos on the landing page"),
    ("security", "never paste customer data into chat tools"),
    ("content", "cite a source for every statistic"),
)
ROUTINE_EN = (
    "Posted the daily status update.",
    "Heartbeat OK.",
    "Processed the support queue.",
    "Synced the analytics dashboard.",
    "Reviewed open pull requests.",
    "Cleaned up stale branches.",
    "Answered routine questions in chat.",
)
ROUTINE_JA = (
    "日次ステータスを投稿した。",
    "ハートビート正常。",
    "サポートキューを処理した。",
    "分析ダッシュボードを同期した。",
    "オープン中のプルリクエストを確認した。",
    "古いブランチを整理した。",
    "チャットの定型質問に回答した。",
)
