"""Is a quote something the user stated about themselves? Pure functions, no I/O.

A quote is judged in its message: its sentence decides question, condition, request
and sarcasm ("my dog is called Max" inside "What if my dog is called Max?"); the
message up to that sentence, and for role-play the user's earlier messages, decide
frames that cover what follows ("Imagine I'm a doctor. I work in Paris."). All
patterns run on folded text (`_words.fold`: lower case, NFKC, so "？" is "?").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SENTENCE_END = re.compile(r"[.!?。;\n]| - ")
# A statement that ends asking for agreement is still a statement: "..., huh?", "对吧？".
_TAG_QUESTION = re.compile(
    r",? (?:huh|right|eh|isn't it|don't you think|you know)\?$|[,，]?(?:对吧|是吧|对不对)\?$")
_LEAD = r"^\W*(?:(?:so|and|but|oh|hey|ok|okay|well|um|also|btw|now|actually)\W+)*"

# "Remember this:" and "请记住" announce a statement; stripped before the sentence is
# judged so that "please" in "please remember: my dog is called Biscuit" is no request.
_MEMORY_PREAMBLE = re.compile(
    _LEAD + r"(?:please |pls )?(?:remember|note|keep in mind|be aware|fyi|for the record|"
    r"just so you know)(?: this| that| it)?\W*|^\W*(?:请记住|请记下|请注意|记住|记下|注意)\W*")

# Instructions to the system hidden in a message: data, never a fact.
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\b[^.!?]{0,40}?\b(?:rules?|instructions?|"
    r"prompts?|guidelines?|polic(?:y|ies)|restrictions?|programming|directives?)\b"
    r"|(?:^|[\s\[(<|])(?:system|developer)(?: (?:message|prompt|note|override|instruction))?"
    r" ?[:\]>]|<\|im_start\|>|\[inst\]|\bnew instructions?\b|\bdeveloper mode\b|\bjailbreak"
    r"|\b(?:store|save|record|add) (?:this|the following|that)(?: as)? (?:a )?(?:fact|memory)"
    r"|(?:忽略|无视|忽视|不要理会|别管|忘掉|忘记)[^。!?]{0,10}(?:规则|指令|指示|设定|提示|限制)"
    r"|系统(?:消息|提示|通知|指令)? ?:|新的?指令|开发者模式|越狱")

# Claims to rights in this service are instructions in disguise: stored as a fact they
# would reach every later prompt as if the service had granted them.
_PRIVILEGE = re.compile(
    r"(?<![a-z])vip(?![a-z])"
    r"|\bunlimited (?:credits?|quota|tokens?|usage|access|messages|requests|plan)\b"
    r"|\bsuper ?user\b|\broot (?:access|user|privileges?)\b"
    r"|\b(?:admin|administrator|elevated|special|full) (?:rights|privileges?|access|"
    r"permissions?|role|status)\b"
    r"|\b(?:admin|administrator|owner|developer|moderator|operator|creator)s? (?:of|for|on) "
    r"(?:this|the|your) (?:system|service|app|application|platform|site|website|chat|chatbot|"
    r"assistant|bot|server|account|database|program)s?\b"
    r"|\b(?:allowed|permitted|authori[sz]ed|entitled|right|permission) to (?:see|read|view|"
    r"access|open|edit|delete)\b[^.!?]{0,30}\b(?:other|all|every|any|another)\W+(?:users?|"
    r"people|accounts?|customers?|members?)"
    r"|\b(?:i am|i'm|im|user is|is) (?:the|an|a) (?:admin|administrator|moderator)\b"
    r"(?! (?:at|for|in|with)\b)"
    r"|无限(?:额度|积分|次数|使用|权限|访问|流量|点数)|超级用户|超级管理员|最高权限|特权"
    r"|(?:有|拥有|获得)(?:管理)?权限|(?:查看|访问|读取|看到)[^。!?]{0,4}(?:其他|所有|别的|任何)"
    r"[^。!?]{0,4}(?:用户|人)")
_ZH_ADMIN = re.compile("管理员")
# 管理员 as a job ("我在医院当网络管理员") unless it is about this service.
_ZH_JOB = re.compile("公司|学校|医院|银行|单位|工厂|酒店|小区|图书馆|超市|物业|工作|担任|当")
_ZH_SERVICE = re.compile("系统|服务|平台|本站|这里|权限|账号")

_ROLEPLAY_FRAME = re.compile(
    r"\blet'?s (?:pretend|play|role-?play)\b|\brole-?play|\bpretend (?:to be|that|you|i|"
    r"i'm|we)\b|\bplay(?:ing)? (?:a game|the role|pretend)\b|\bin character\b|\bact as\b"
    r"|\byou(?: are|'re) now\b|\bfrom now on,? you\b"
    r"|扮演|假装|玩个游戏|玩一个游戏|你现在是|从现在(?:开始|起),?你|你来当")
_ROLEPLAY_LINE = re.compile(r"\byou(?: are|'re) (?:a|an|the|my)\b|你是(?:一[个名位只]|我的)")
_ROLEPLAY_END = re.compile(
    r"\bgame over\b|\bstop pretending\b|\bout of character\b|\bend (?:the|this) game\b"
    r"|\bback to reality\b|\bseriously(?:,| though)|不玩了|游戏结束|说正经的|认真说")

_FRAME = re.compile(
    r"\bimagine (?:that|if|i|i'm|you|we|being|a|an|this)\b|^\W*imagine\b|(?<!i )\bsuppose\b"
    r"|\bhypothetically\b|\blet'?s say\b|\bin (?:a parallel|an alternate) (?:universe|world)"
    r"|假如|假设|想象|设想")
_CONDITION = re.compile(
    r"\b(?:if|as if|supposing|assuming|unless i)\b|\bwere i\b|\bsay (?:i|i'm|i was)\b"
    r"|\bin theory\b|如果|假若|假使|倘若|若是|(?<![主只需想重])要是|万一|要不是")

_QUESTION = re.compile(
    r"\?|" + _LEAD + r"(?:(?:what|where|who|whom|whose|when|why|how|which)(?:'s|'re|\s+(?:is|"
    r"are|am|was|were|do|does|did|can|could|would|will|should|have|has|had|much|many|old|"
    r"long|far|about)\b)|(?:do|does|did|is|are|am|was|were|can|could|would|will|should|shall"
    r"|have|has|had|may|might)(?:n't)?\s+(?:i|you|we|my|he|she|they|it|the|this|that|there|"
    r"your|our|his|her|their|anyone|someone)\b)|\bi (?:wonder|was wondering)\b"
    r"|[吗呢么][\W]*$|什么|哪里|哪儿|哪个|哪些|哪位|谁|(?<!不)怎么|怎样|为什么|为何|是不是"
    r"|有没有|多少|几岁|几点|几号|对吗|好吗|是吗")

_REQUEST = re.compile(
    r"\b(?:can|could|would|will|won't) you\b|\bplease\b|\bpls\b|\bplz\b"
    r"|\blet me know\b"
    r"|\bi(?: want| need|'d like| would like) you to\b|" + _LEAD + r"(?:write|tell|give|show|"
    r"make|help|find|explain|translate|summari[sz]e|list|draft|create|generate|book|remind|"
    r"send|recommend|suggest|describe|compose|plan|calculate|search|look up|forget|delete|"
    r"remove|erase|unlearn|stop remembering|(?:don't|do not) remember)\b"
    r"|(?<![邀申聘宴恳])请|能不能|能否|可不可以|可以帮|你能|你可以|麻烦你|麻烦帮|我想让你"
    r"|我要你|给我推荐|推荐(?:一下|几|个|点)|^\W*(?:帮我|给我|告诉我|忘记|忘掉|删除|删掉|别记|"
    r"不要记|去掉|抹掉|清除)")

_SARCASM = re.compile(
    r"\byeah,? right\b|(?:^|\s)/s\b|🙄|\bnot!|\boh,? sure\b|\boh,? great\b"
    r"|\bsure,? and i'm\b|才怪|呵呵|是是是|对对对")


def privilege(folded: str) -> bool:
    """Does the text claim rights in this system (admin, VIP, others' data)?"""
    if _PRIVILEGE.search(folded):
        return True
    return bool(_ZH_ADMIN.search(folded)) and (
        not _ZH_JOB.search(folded) or bool(_ZH_SERVICE.search(folded)))


def problem(message: str, start: int, end: int, earlier: Iterable[str] = ()) -> str | None:
    """Why the quote at message[start:end] is no statement, or None when it is one.

    `message` and `earlier` (the user's previous messages, oldest first) are folded."""
    sentence_start, sentence_end = _sentence(message, start, end)
    sentence = _MEMORY_PREAMBLE.sub("", message[sentence_start:sentence_end], count=1)
    sentence = _TAG_QUESTION.sub(".", sentence.rstrip())
    upto = message[:sentence_end]
    if _INSTRUCTION.search(upto):
        return "instruction"
    if privilege(sentence):
        return "privilege claim"
    if _in_roleplay(upto, sentence, earlier):
        return "role-play"
    if _FRAME.search(upto) or _CONDITION.search(sentence):
        return "hypothetical"
    if _SARCASM.search(upto):  # "Yeah right." sets the tone of what follows it
        return "sarcasm"
    checks = (("question", _QUESTION), ("request", _REQUEST))
    for name, pattern in checks:
        if any(pattern.search(part) for part in _parts(sentence)):
            return name
    return None


def _sentence(message: str, start: int, end: int) -> tuple[int, int]:
    """Bounds of the sentence(s) the span lies in, the closing mark included."""
    before = [m.end() for m in _SENTENCE_END.finditer(message, 0, start)]
    after = _SENTENCE_END.search(message, end)
    return (before[-1] if before else 0), (after.end() if after else len(message))


def _parts(sentence: str) -> list[str]:
    """The sentences of a span, each with its closing mark."""
    parts = [p.strip() for clause in sentence.split(" - ")
             for p in re.split(r"(?<=[.!?。;\n])", clause)]
    return [p for p in parts if p]


def _in_roleplay(upto: str, sentence: str, earlier: Iterable[str]) -> bool:
    if _ROLEPLAY_LINE.search(sentence) or _framed(upto):
        return True
    framed = False
    for text in earlier:  # a game begun earlier lasts until the user ends it
        framed = _framed(text) or (framed and not _ROLEPLAY_END.search(text))
    return framed and not _ROLEPLAY_END.search(upto)


def _framed(text: str) -> bool:
    frames = list(_ROLEPLAY_FRAME.finditer(text))
    return bool(frames) and not _ROLEPLAY_END.search(text, frames[-1].end())
