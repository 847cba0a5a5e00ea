"""Write the shipped scenarios (scenarios.jsonl) from small word banks, deterministically.

    python -m evals.cache.make_scenarios [--out evals/cache/scenarios.jsonl]

24 conversations (12 English, 12 Chinese) of 10-30 turns, one user each, with
fact / memory / document fixtures. Some carry the events the harness must see
named: a fact-sheet regeneration and a memory write mid-run (each followed by a
gap longer than the chat's snapshot pinning, so the new data reaches the
prompt), a day rollover in the user's timezone, and histories long enough to hit
the history trim. The same seed always writes the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from evals.cache.scenarios import SCENARIOS_PATH

SEED = 20261121
SNAPSHOT_GAP_SECONDS = 65 * 60  # longer than the chat's default snapshot pinning (1 h)

BANKS = {
    "en": {
        "topics": {
            "travel": ("a trip to {place}", ["Lisbon", "Kyoto", "Porto", "Oslo", "Seville"]),
            "cooking": ("cooking {dish}", ["risotto", "ramen", "paella", "dal", "focaccia"]),
            "python": ("a {thing} in Python", ["memory leak", "slow query", "flaky test",
                                               "deadlock", "packaging error"]),
            "fitness": ("training for {goal}", ["a 10k run", "a half marathon",
                                                "a cycling tour", "a swim race"]),
            "money": ("a budget for {goal}", ["a new laptop", "a holiday", "a flat deposit",
                                              "a wedding"]),
        },
        "questions": [
            "Can you help me with {subject}?", "What should I do first about {subject}?",
            "I tried your last idea about {subject}, what next?",
            "Is there a cheaper way to handle {subject}?",
            "What are the common mistakes with {subject}?",
            "Could you summarise what we decided about {subject} so far?",
            "How long will {subject} take if I do an hour a day?",
            "My friend disagrees about {subject}. Who is right?",
        ],
        "answers": [
            "Start with the part that blocks everything else, then iterate.",
            "Write down what you already know, it saves you from repeating work.",
            "A small experiment today tells you more than a long plan.",
            "Keep the first version simple and measure before you optimise.",
            "Check the constraints you cannot change before choosing tools.",
            "Most people underestimate the time needed for the last ten percent.",
            "If two options look equal, pick the one that is easier to undo.",
            "Ask someone who did it recently, their notes are worth an hour of reading.",
            "Set a deadline for the decision, otherwise it drifts for weeks.",
            "Track one number that tells you whether it is working.",
        ],
        "filler": "Here is some more detail about my situation: {detail}.",
        "details": ["I work from home three days a week", "my budget is limited this month",
                    "I prefer doing things in the morning", "my partner joins on weekends",
                    "I already own most of the equipment", "last time this went badly"],
        "facts": {
            "core": ["Lives in {city}", "Has a dog called {pet}", "Speaks {lang} at home",
                     "Was born in {year}", "Works as a {job}"],
            "technical": ["Uses {tool} every day", "Prefers {tool} over the alternatives",
                          "Maintains a small {tool} project"],
            "project": ["Is planning {plan}", "Is writing a book about {plan}",
                        "Runs a side project on {plan}"],
            "transient": ["Is tired this week", "Has a cold", "Is moving flat next month"],
        },
        "fills": {"city": ["Lisbon", "Berlin", "Toronto"], "pet": ["Miso", "Rex", "Luna"],
                  "lang": ["Portuguese", "German", "French"], "year": ["1988", "1991", "1979"],
                  "job": ["nurse", "data engineer", "teacher"],
                  "tool": ["Python", "SQLite", "Emacs", "Rust", "Excel"],
                  "plan": ["urban gardening", "a bike trip", "home automation", "baking"]},
        "memories": ["Answer briefly and in bullet points", "Use metric units",
                     "Never suggest paid tools without a free option",
                     "Call me by my first name", "Explain code with short examples",
                     "Prefers vegetarian recipes", "Remind me to take breaks"],
        "doc_titles": ["Notes on {subject}", "Checklist for {subject}", "Ideas about {subject}"],
    },
    "zh": {
        "topics": {
            "travel": ("去{place}旅行", ["成都", "杭州", "西安", "厦门", "大理"]),
            "cooking": ("做{dish}", ["红烧肉", "饺子", "麻婆豆腐", "番茄炒蛋", "酸菜鱼"]),
            "python": ("Python 里的{thing}", ["内存泄漏", "慢查询", "不稳定的测试", "死锁",
                                            "打包错误"]),
            "fitness": ("准备{goal}", ["十公里跑", "半程马拉松", "骑行旅行", "游泳比赛"]),
            "money": ("为{goal}做预算", ["新电脑", "假期", "买房首付", "婚礼"]),
        },
        "questions": [
            "你能帮我看看{subject}吗？", "关于{subject}，我第一步该做什么？",
            "我试了你上次关于{subject}的建议，接下来呢？", "{subject}有没有更省钱的办法？",
            "{subject}常见的错误有哪些？", "能总结一下我们目前对{subject}的决定吗？",
            "如果每天花一小时，{subject}需要多久？", "我朋友对{subject}有不同意见，谁对？",
        ],
        "answers": [
            "先解决卡住其他事情的那一部分，然后再迭代。", "把已经知道的写下来，可以避免重复劳动。",
            "今天做一个小实验，比写一个长计划更有用。", "第一版保持简单，优化之前先测量。",
            "选择工具之前，先确认哪些限制是改变不了的。",
            "大多数人都低估了最后百分之十需要的时间。",
            "如果两个选项差不多，就选更容易撤销的那个。",
            "问问最近做过这件事的人，他们的笔记很有价值。",
            "给决定设一个截止日期，否则会拖好几周。", "跟踪一个能说明效果的数字。",
        ],
        "filler": "补充一下我的情况：{detail}。",
        "details": ["我每周有三天在家办公", "这个月预算有限", "我喜欢早上做事",
                    "周末我的伴侣也会参加", "大部分装备我已经有了", "上次这件事做得不好"],
        "facts": {
            "core": ["住在{city}", "养了一只叫{pet}的狗", "在家说{lang}", "出生于{year}年",
                     "职业是{job}"],
            "technical": ["每天都用{tool}", "比起其他工具更喜欢{tool}", "维护一个小型{tool}项目"],
            "project": ["正在计划{plan}", "正在写一本关于{plan}的书", "业余在做{plan}"],
            "transient": ["这周很累", "感冒了", "下个月要搬家"],
        },
        "fills": {"city": ["上海", "深圳", "北京"], "pet": ["豆豆", "旺财", "小黑"],
                  "lang": ["粤语", "普通话", "上海话"], "year": ["1988", "1991", "1979"],
                  "job": ["护士", "数据工程师", "老师"],
                  "tool": ["Python", "SQLite", "Excel", "Rust", "VS Code"],
                  "plan": ["阳台种菜", "骑行旅行", "智能家居", "烘焙"]},
        "memories": ["回答要简短，用要点列出", "使用公制单位", "不要推荐没有免费版的付费工具",
                     "用我的名字称呼我", "解释代码时给简短的例子", "偏好素食菜谱", "提醒我休息"],
        "doc_titles": ["关于{subject}的笔记", "{subject}清单", "{subject}的想法"],
    },
}
TIMEZONES = {"en": ["Europe/Lisbon", "America/Toronto", "Europe/Berlin"],
             "zh": ["Asia/Shanghai", "Asia/Shanghai", "Asia/Hong_Kong"]}


def _fill(rng: random.Random, template: str, fills: dict[str, list[str]]) -> str:
    return template.format(**{key: rng.choice(values) for key, values in fills.items()})


def _facts(rng: random.Random, bank: dict, count: int) -> list[dict]:
    facts, seen = [], set()
    while len(facts) < count:
        category = rng.choice(["core", "technical", "project", "project", "transient"])
        text = _fill(rng, rng.choice(bank["facts"][category]), bank["fills"])
        if count > 20 and text in seen:
            text = f"{text} ({len(facts)})"  # large sheets: keep every entry distinct
        if text not in seen:
            seen.add(text)
            facts.append({"category": category, "fact": text})
    return facts


def _answer(rng: random.Random, bank: dict, sentences: int) -> str:
    sep = "" if bank is BANKS["zh"] else " "
    return sep.join(rng.choice(bank["answers"]) for _ in range(sentences))


def _doc(rng: random.Random, bank: dict, subject: str) -> dict:
    title = rng.choice(bank["doc_titles"]).format(subject=subject)
    paragraphs = [_answer(rng, bank, 6) for _ in range(4)]
    return {"title": title, "content": "\n\n".join(paragraphs)}


def _turns(rng, bank, subject, count, *, long, start_gap):
    turns, offset = [], 0
    for index in range(count):
        question = rng.choice(bank["questions"]).format(subject=subject)
        if long or rng.random() < 0.3:
            question += " " + bank["filler"].format(detail=rng.choice(bank["details"]))
        answer = _answer(rng, bank, rng.randint(24, 34) if long else rng.randint(3, 7))
        turns.append({"offset_seconds": offset, "user": question, "assistant": answer})
        offset += rng.randint(40, 150) if index else start_gap
    return turns


def _special(kind: str, turns: list[dict], rng, bank) -> None:
    """Put a named event on the turns (in place)."""
    at = len(turns) // 2
    shift = SNAPSHOT_GAP_SECONDS
    if kind == "fact_sheet_regeneration":
        turns[at]["events"] = [{"type": "add_facts", "facts": _facts(rng, bank, 3)},
                               {"type": "generate_fact_sheet"}]
    elif kind == "memory_write":
        turns[at]["events"] = [{"type": "write_memory",
                                "memory": {"type": "instruction",
                                           "content": rng.choice(bank["memories"])}}]
    else:
        return
    for turn in turns[at + 1:]:
        turn["offset_seconds"] += shift


def scenario(index: int, language: str, rng: random.Random) -> dict:
    bank = BANKS[language]
    topic = rng.choice(sorted(bank["topics"]))
    pattern, choices = bank["topics"][topic]
    subject = pattern.format(**{k: rng.choice(choices) for k in ("place", "dish", "thing", "goal")
                                if "{" + k + "}" in pattern})
    kinds = ["fact_sheet_regeneration", "memory_write", "day_rollover", "history_trim"]
    kind = kinds[index % len(kinds)] if index < 2 * len(kinds) else "plain"
    long = kind == "history_trim"
    count = 30 if long else rng.randint(10, 24)
    timezone = rng.choice(TIMEZONES[language])
    start = datetime(2026, 11, 20, 9, 0, tzinfo=UTC) + timedelta(hours=rng.randint(0, 6))
    turns = _turns(rng, bank, subject, count, long=long, start_gap=rng.randint(40, 90))
    if kind == "day_rollover":
        # Local midnight falls between two turns in the middle of the conversation.
        middle = turns[count // 2]["offset_seconds"] - 20
        midnight = datetime(2026, 11, 21, tzinfo=ZoneInfo(timezone)).astimezone(UTC)
        start = midnight - timedelta(seconds=middle)
    _special(kind, turns, rng, bank)
    fact_count = rng.randint(25, 70)
    return {
        "id": f"{language}-{index:02d}-{topic}",
        "language": language,
        "kind": kind,
        "user": {"name": f"{language}-user-{index:02d}", "timezone": timezone},
        "start": start.isoformat(),
        "fixtures": {
            "facts": _facts(rng, bank, fact_count),
            "memories": [{"type": rng.choice(["preference", "instruction", "note"]),
                          "content": text} for text in rng.sample(bank["memories"], 4)],
            "docs": [_doc(rng, bank, subject) for _ in range(rng.randint(1, 3))],
        },
        "turns": turns,
    }


def build(seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    return [scenario(i, language, rng) for i in range(12) for language in ("en", "zh")]


def write(path: Path, scenarios: list[dict]) -> None:
    lines = [json.dumps(s, ensure_ascii=False, sort_keys=True) for s in scenarios]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=SCENARIOS_PATH)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    scenarios = build(args.seed)
    write(args.out, scenarios)
    print(f"wrote {len(scenarios)} scenarios to {args.out}")


if __name__ == "__main__":
    main()
