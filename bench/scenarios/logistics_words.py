"""The words of the logistics scenario: its roles, standing facts, systems, feedback and chatter.

Written for this scenario alone (a regional freight and warehousing company, twelve agents),
so that the library is measured on text nobody tuned it to. Every value that a question checks
is written the same way in both languages (``06:45``, ``dock D9``, ``v2.14.3``), so that an
English question about a Japanese statement can still be judged by its text.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AGENTS",
    "CHATTER_EN",
    "CHATTER_JA",
    "DECISIONS",
    "FACTS",
    "FEEDBACK",
    "SYSTEMS",
    "Fact",
    "Feedback",
    "Kind",
    "System",
]

#: Twelve roles of the company, each an agent.
AGENTS: tuple[str, ...] = (
    "dispatch",
    "warehouse",
    "yard",
    "fleetcare",
    "customs",
    "buyer",
    "billing",
    "safety",
    "routing",
    "clientdesk",
    "itops",
    "crew",
)


@dataclass(frozen=True)
class Fact:
    """A standing fact that changes now and then, always stated in prose.

    ``state_*`` templates introduce or restate a value, ``change_*`` ones announce a new one;
    ``ask_*`` paraphrase the question without quoting any statement. ``owners`` may state it.
    """

    key: str
    values: tuple[str, ...]
    owners: tuple[str, ...]
    state_ja: tuple[str, ...]
    state_en: tuple[str, ...]
    change_ja: tuple[str, ...]
    change_en: tuple[str, ...]
    ask_ja: tuple[str, ...]
    ask_en: tuple[str, ...]


FACTS: tuple[Fact, ...] = (
    Fact(
        "rollcall",
        ("06:45", "07:15", "06:30", "07:00"),
        ("crew", "dispatch", "safety"),
        ("朝の点呼は{v}に始めます。", "ドライバー各位、点呼の開始は{v}です。"),
        ("Morning roll call starts at {v}.", "Drivers: the roll call begins at {v} sharp."),
        (
            "点呼の時刻を変えます。今後は{v}開始でお願いします。",
            "来週から朝の点呼を{v}に移します。",
        ),
        (
            "Change to the morning routine: roll call is at {v} from now on.",
            "Heads-up, drivers — starting next week the roll call moves to {v}.",
        ),
        ("ドライバーの朝の集合って何時から？", "いまの点呼は何時開始だっけ？"),
        (
            "What time do drivers have to show up for the morning check-in?",
            "When do we gather the drivers in the morning these days?",
        ),
    ),
    Fact(
        "reefer",
        ("8°C", "6°C", "4°C", "5°C"),
        ("safety", "fleetcare", "warehouse"),
        ("冷蔵便の荷室温度の上限は{v}とする。", "チルド便は荷室{v}以下を保つこと。"),
        (
            "Chilled loads must stay at or below {v} in the cargo bay.",
            "Cold-chain rule: the reefer box may not go above {v}.",
        ),
        (
            "冷蔵便の温度基準を見直しました。これからは{v}を超えたら出荷停止です。",
            "荷室の上限温度を{v}に改めます。",
        ),
        (
            "We tightened the cold-chain rule: a reefer over {v} is now held back.",
            "New ceiling for refrigerated trailers: {v}.",
        ),
        ("チルド貨物は何度まで許される？", "冷凍車の庫内は何度以下にしておけばいい？"),
        (
            "What's the highest temperature allowed for refrigerated freight?",
            "How warm may a cold truck's load get before we stop it?",
        ),
    ),
    Fact(
        "returns",
        ("dock D9", "dock D14", "dock D5", "dock D11"),
        ("warehouse", "yard", "clientdesk"),
        ("返品の受け入れは{v}で行います。", "お客様からの返送品は{v}で受け付けます。"),
        ("Customer returns are received at {v}.", "Send every returned parcel to {v}."),
        (
            "返品受付の場所が変わります。今後は{v}に回してください。",
            "返送品の荷受けを{v}へ移しました。",
        ),
        (
            "Returns are moving: please route them to {v} from now on.",
            "We relocated the returns intake to {v}.",
        ),
        ("お客さんから戻ってきた荷物はどこで受ける？", "返送された品物はどのドックに持っていく？"),
        (
            "Where do we take in goods that customers ship back?",
            "Which dock handles the stuff clients send back to us?",
        ),
    ),
    Fact(
        "wms",
        ("v2.14.3", "v2.15.0", "v2.15.2", "v3.0.1"),
        ("itops", "warehouse"),
        ("倉庫管理システムの本番は{v}で稼働中。", "WMS本番環境のバージョンは{v}です。"),
        ("The WMS in production runs {v}.", "Production warehouse software is on {v}."),
        (
            "WMSを{v}に上げました。本番はこれで動いています。",
            "倉庫システムのアップデート完了、本番は{v}になりました。",
        ),
        (
            "We upgraded the warehouse system; production is on {v} now.",
            "Rollout done: the live WMS is {v}.",
        ),
        ("本番で動いてる倉庫システムは何番？", "いまのWMSのリリースはどれ？"),
        (
            "Which release of the warehouse management software is live?",
            "What build of the WMS are the pickers running at the moment?",
        ),
    ),
    Fact(
        "surcharge",
        ("12.5%", "14.0%", "11.0%", "13.5%"),
        ("billing", "buyer"),
        ("燃料サーチャージは運賃の{v}です。", "現行の燃油サーチャージ率は{v}。"),
        (
            "Fuel surcharge is {v} of the freight charge.",
            "We bill a fuel surcharge of {v} on every shipment.",
        ),
        (
            "次回請求分から燃料サーチャージを{v}に改定します。",
            "燃油サーチャージ率、{v}へ変更となりました。",
        ),
        (
            "Fuel surcharge revised to {v} starting with the next invoices.",
            "Billing update: the fuel surcharge is now {v}.",
        ),
        ("燃油の追加料金は今何パーセント？", "運賃に上乗せする燃料代の率は？"),
        (
            "What percentage do we add to freight for fuel?",
            "How much extra for diesel goes on a customer's bill right now?",
        ),
    ),
    Fact(
        "opsroom",
        ("room B-204", "room C-310", "room A-118"),
        ("dispatch", "routing", "crew"),
        ("週次の運行会議は{v}で開きます。", "毎週の運行会議の場所は{v}です。"),
        (
            "The weekly operations meeting is held in {v}.",
            "Weekly ops sync takes place in {v}.",
        ),
        ("運行会議の部屋を{v}に移します。", "来週以降、運行会議は{v}でやります。"),
        ("Ops meeting moves to {v}, starting this week.", "We'll hold the weekly ops sync in {v}."),
        ("毎週のオペレーション打合せはどの部屋？", "運行ミーティングってどこでやってる？"),
        (
            "Where do we meet for the weekly ops review?",
            "Which room is the weekly operations get-together in?",
        ),
    ),
    Fact(
        "cutoff",
        ("16:30", "17:45", "15:50"),
        ("dispatch", "clientdesk", "warehouse"),
        ("宅配便の集荷締め切りは{v}です。", "宅配の当日出荷は{v}締めです。"),
        ("Parcel pickup cutoff is {v}.", "Same-day parcels must be handed over by {v}."),
        ("集荷の締め時間が{v}に変わりました。", "宅配業者との取り決めで、締めは{v}になります。"),
        (
            "The courier moved our pickup cutoff to {v}.",
            "New same-day deadline from the courier: {v}.",
        ),
        ("宅配業者に渡すのは何時まで？", "当日便に間に合わせるには何時までに出せばいい？"),
        (
            "By when do parcels have to be ready for the courier?",
            "What's the latest a box can go out and still make the same-day truck?",
        ),
    ),
    Fact(
        "hotline",
        ("0120-55-8812", "0120-55-9034", "0120-61-2207"),
        ("safety", "crew"),
        ("夜間の緊急連絡先は{v}です。", "夜間トラブル時は{v}へ電話してください。"),
        ("After-hours emergency line: {v}.", "At night, call {v} for any emergency."),
        ("夜間緊急番号が変わりました。新しい番号は{v}。", "緊急連絡先を{v}に切り替えました。"),
        ("New after-hours emergency number: {v}.", "The night emergency line is now {v}."),
        ("夜中に事故があったらどこに電話する？", "夜間に何か起きたときの連絡番号は？"),
        (
            "What number do drivers call if something goes wrong at night?",
            "Who do I phone after hours when there's trouble on the road?",
        ),
    ),
    Fact(
        "charging",
        ("area F3", "area K1", "area G7"),
        ("warehouse", "safety", "yard"),
        ("フォークリフトの充電は{v}で行うこと。", "リフトのバッテリー充電場所は{v}です。"),
        ("Forklifts charge in {v}.", "Lift truck batteries are charged in {v} only."),
        ("充電場所を{v}へ移設しました。", "フォークリフトの充電は今後{v}でお願いします。"),
        (
            "Forklift charging has been relocated to {v}.",
            "Please plug the forklifts in at {v} from now on.",
        ),
        ("リフトのバッテリーはどこで充電する？", "フォークの電池切れ、どこに持っていけばいい？"),
        (
            "Where should the lift trucks be plugged in?",
            "Where do we take a forklift whose battery is low?",
        ),
    ),
    Fact(
        "overtime",
        ("40h", "45h", "36h"),
        ("crew", "billing"),
        ("月の残業上限は{v}です。", "時間外労働は月{v}までとします。"),
        ("Monthly overtime is capped at {v}.", "No one works more than {v} of overtime a month."),
        ("残業の上限を{v}に変更します。", "今後、時間外は月{v}までに抑えてください。"),
        (
            "Overtime cap changes to {v} per month, effective now.",
            "The overtime ceiling is now {v}.",
        ),
        ("ひと月に何時間まで残業していい？", "時間外の上限っていまいくつ？"),
        (
            "How many extra hours per month can staff work at most?",
            "What's the limit on hours beyond the normal shift each month?",
        ),
    ),
)


@dataclass(frozen=True)
class System:
    """Something that breaks: an id shape, symptoms and fixes (ja, en), question paraphrases.

    ``ident`` is a format with ``{n}`` (a number) or ``{r}`` (a rack). Symptom and fix pairs
    are written in both languages; ``ask_*`` name the thing (``{id}``) and paraphrase the
    trouble (``{what}``: the question's words for the symptom).
    """

    name_ja: str
    name_en: str
    ident: str
    owners: tuple[str, ...]
    symptoms: tuple[tuple[str, str, str, str], ...]  # ja, en, asked ja, asked en
    fixes: tuple[tuple[str, str], ...]


SYSTEMS: tuple[System, ...] = (
    System(
        "ハンディスキャナ",
        "handheld scanner",
        "rack {r}",
        ("warehouse", "itops"),
        (
            (
                "バーコードを読まなくなった",
                "stopped reading barcodes",
                "読み取れない",
                "not scanning",
            ),
            (
                "数分ごとに再起動する",
                "reboots every few minutes",
                "勝手に落ちる",
                "keeps restarting",
            ),
        ),
        (
            ("充電クレードルのケーブルを交換した", "replaced the charging cradle cable"),
            ("スキャナのファームを4.2.1に戻した", "rolled the scanner firmware back to 4.2.1"),
            ("Wi-Fiのチャンネルを11に固定した", "pinned the access point to channel 11"),
        ),
    ),
    System(
        "冷凍ユニット",
        "reefer unit",
        "truck T-{n}",
        ("fleetcare", "safety", "dispatch"),
        (
            (
                "温度警報が鳴り続けた",
                "kept raising temperature alarms",
                "アラームが止まらない",
                "alarming",
            ),
            ("コンプレッサーが止まった", "lost its compressor", "冷えなくなった", "not cooling"),
        ),
        (
            ("ドアパッキンを新品にした", "fitted a new door gasket"),
            ("温度センサーを再校正した", "recalibrated the temperature probe"),
            ("冷媒を補充しリレーを交換した", "topped up refrigerant and swapped the relay"),
        ),
    ),
    System(
        "発注データ",
        "purchase order",
        "PO#{n}",
        ("buyer", "itops", "billing"),
        (
            ("保留のまま進まない", "is stuck in pending", "止まっている", "stuck"),
            ("金額が二重計上された", "was booked twice", "二重になった", "duplicated"),
        ),
        (
            ("承認ルートを購買課長に付け替えた", "reassigned the approval to the purchasing lead"),
            ("EDIの再送を止めて重複行を取り消した", "stopped the EDI resend and voided the copy"),
            ("仕入先コードをSUP-7へ修正した", "corrected the supplier code to SUP-7"),
        ),
    ),
    System(
        "通関申告",
        "customs declaration",
        "entry CE-{n}",
        ("customs", "billing"),
        (
            ("税関で差し戻された", "was rejected by customs", "差し戻し", "bounced"),
            (
                "HSコードの不一致が出た",
                "failed on an HS code mismatch",
                "コードが合わない",
                "code error",
            ),
        ),
        (
            ("HSコードを8471.30に訂正して再申告した", "refiled with HS code 8471.30"),
            ("インボイスの原産国欄を直した", "fixed the country of origin on the invoice"),
            ("通関業者に原本を再提出した", "sent the original papers to the broker again"),
        ),
    ),
    System(
        "配車アプリ",
        "dispatch app",
        "route R-{n}",
        ("routing", "dispatch", "itops"),
        (
            ("ルートが表示されない", "shows a blank route", "出てこない", "blank"),
            ("到着予定が2時間ずれる", "gives ETAs two hours off", "時刻がおかしい", "wrong ETAs"),
        ),
        (
            ("地図キャッシュを消して再同期した", "cleared the map cache and resynced"),
            ("タイムゾーン設定をAsia/Tokyoに直した", "set the time zone back to Asia/Tokyo"),
            ("経由地を削除して組み直した", "rebuilt the route without the extra waypoint"),
        ),
    ),
)


#: Decisions: what is decided, for an identifier shape, and the choices (written the same in
#: both languages). Text templates take ``{id}`` and ``{c}``; ``ask_*`` only ``{id}``.
@dataclass(frozen=True)
class Kind:
    """A kind of decision."""

    ident: str
    owners: tuple[str, ...]
    choices: tuple[str, ...]
    say_ja: tuple[str, ...]
    say_en: tuple[str, ...]
    ask_ja: tuple[str, ...]
    ask_en: tuple[str, ...]


DECISIONS: tuple[Kind, ...] = (
    Kind(
        "PO#{n}",
        ("buyer", "billing"),
        ("Maruwa Trading", "Sakai Pallet", "Hokuto Parts", "Kaede Packaging"),
        ("{id}の発注先は{c}に決めました。", "検討の結果、{id}は{c}へ発注します。"),
        ("We're placing {id} with {c}.", "Decision on {id}: the order goes to {c}."),
        ("{id}はどこの業者に頼んだ？", "{id}の仕入れ先、結局どこになった？"),
        ("Which vendor got {id}?", "Who did we end up buying {id} from?"),
    ),
    Kind(
        "route R-{n}",
        ("routing", "dispatch"),
        ("hub NGO-2", "hub OSA-1", "hub SDJ-4", "hub TYO-3"),
        ("{id}は今後{c}経由で運行する。", "{id}の中継地点は{c}とします。"),
        ("{id} will run through {c}.", "Routing call: {id} goes via {c}."),
        ("{id}はどこを経由することになった？", "{id}の中継はどこ？"),
        ("What stopover did we pick for {id}?", "Which hub does {id} pass through now?"),
    ),
    Kind(
        "account KX-{n}",
        ("clientdesk", "dispatch"),
        ("Kamome Freight", "Tsubame Cargo", "Hibari Line", "Shirasagi Express"),
        ("{id}の配送は{c}に任せることにした。", "{id}向けの輸送は{c}で決定。"),
        ("Deliveries for {id} will be handled by {c}.", "We chose {c} to carry for {id}."),
        ("{id}の荷物はどの運送会社が運ぶ？", "{id}担当の運送業者はどこに決まった？"),
        ("Which carrier ships for {id}?", "Who's trucking {id}'s goods these days?"),
    ),
)


@dataclass(frozen=True)
class Feedback:
    """A topic a human operator gives feedback on: what they said, per period (ja, en)."""

    area_ja: str
    area_en: str
    asked_ja: str
    asked_en: str
    said: tuple[tuple[str, str], ...]


FEEDBACK: tuple[Feedback, ...] = (
    Feedback(
        "納品書",
        "delivery notes",
        "納品の書類",
        "the paperwork we hand over at delivery",
        (
            ("受領印の欄を右下に移すこと", "move the signature box to the bottom right"),
            ("品番は太字で印字すること", "print item numbers in bold"),
        ),
    ),
    Feedback(
        "夜勤の引き継ぎ",
        "night shift handover",
        "夜のシフトの申し送り",
        "passing work from the night crew",
        (
            ("未出荷の一覧を紙でも残すこと", "leave a printed list of unshipped orders"),
            ("引き継ぎは5分以内に終えること", "keep the handover under five minutes"),
        ),
    ),
    Feedback(
        "顧客への遅延連絡",
        "delay notices to customers",
        "お客様に遅れを伝えるやり方",
        "how we tell clients a shipment is late",
        (
            ("遅れが30分を超えたら電話すること", "phone the client once a delay passes 30 minutes"),
            (
                "メールに新しい到着時刻を必ず書くこと",
                "always state the new arrival time in the email",
            ),
        ),
    ),
    Feedback(
        "パレットの積み方",
        "pallet stacking",
        "パレットへの積み付け",
        "the way loads are stacked on pallets",
        (
            ("重い箱は必ず下段に置くこと", "put the heavy cartons on the bottom layer"),
            ("ストレッチフィルムは3周以上巻くこと", "wrap the stretch film at least three turns"),
        ),
    ),
    Feedback(
        "ダッシュボード",
        "the operations dashboard",
        "運行状況の画面",
        "the screen that shows the day's operations",
        (
            ("遅延中の便を一番上に出すこと", "show delayed runs at the very top"),
            ("温度の推移をグラフにすること", "chart the temperature history"),
        ),
    ),
    Feedback(
        "構内の安全",
        "yard safety",
        "敷地内の安全対策",
        "keeping people safe in the yard",
        (
            ("歩行者通路にコーンを並べること", "line the walkway with traffic cones"),
            ("バック時は誘導員を必ず付けること", "always use a spotter when reversing"),
        ),
    ),
    Feedback(
        "請求書の書式",
        "invoice layout",
        "請求の書類の見た目",
        "how our bills look",
        (
            ("サーチャージを別行にすること", "list the surcharge on its own line"),
            ("支払期日を上部に書くこと", "put the due date at the top"),
        ),
    ),
    Feedback(
        "問い合わせ対応",
        "customer calls",
        "電話での応対",
        "answering the phone to clients",
        (
            ("追跡番号を最初に聞くこと", "ask for the tracking number first"),
            ("保留は1分までにすること", "never keep a caller on hold over a minute"),
        ),
    ),
)

CHATTER_JA: tuple[str, ...] = (
    "{z}ゾーンの棚卸し、差異なし。",
    "{l}番レーンの仕分けは順調。",
    "シフト交代：特記事項なし。",
    "{n}号車の給油完了。",
    "昼休憩のローテーションは通常どおり。",
    "入荷{k}件、すべて検品済み。",
    "構内清掃、{z}ゾーン終了。",
    "本日の出荷予定、計画どおり進行中。",
)
CHATTER_EN: tuple[str, ...] = (
    "Cycle count in zone {z} matched the books.",
    "Sorting on lane {l} is running smoothly.",
    "Shift handover: nothing unusual to report.",
    "Vehicle {n} refuelled.",
    "Lunch rotation as usual today.",
    "{k} inbound pallets checked in, no damage.",
    "Yard sweep finished for zone {z}.",
    "Outbound plan for today is on track.",
)
