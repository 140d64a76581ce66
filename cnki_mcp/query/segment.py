"""Concept words of a raw research question (DESIGN.md §Modules, `query/`; docs/benchmarks.md,
"Planning a raw question").

`question_concepts(text, cut)` turns a question such as 大语言模型幻觉问题有哪些缓解方法 into the
words worth searching for (大语言, 模型, 幻觉). `cut` is a word segmenter (`Segmenter`); the one the
server uses is `JiebaSegmenter` (jieba, pure Python, its dictionary loaded on the first call and
never at import — about 0.15 s import + 0.8 s dictionary, measured in docs/benchmarks.md).

Rules (general Chinese usage, no vocabulary taken from any corpus or question set):
- Latin runs are protected from the segmenter and kept whole: LLM, RAG, C++, Wi-Fi 8, IEEE
  802.11be, GPT-4; adjacent Latin words are one term (deep learning); a bare number, one Latin
  letter or Greek letters glue to the Han word after them (2型糖尿病, A股, X射线, γ射线, α-淀粉酶), a
  letter written after a Han word and before a separator to that word (维生素D); Greek letters
  against Latin letters or digits are letters of the name (TNF-α, NF-κB, Wnt/β-catenin, α-SMA); a
  prefix ending in a hyphen glues to the Han word after it (D-二聚体, 5-氟尿嘧啶), and to the word
  after that too when the segmenter left two characters (α-突触/核蛋白 -> α-突触核蛋白).
  A stop word in capitals is an acronym (DID双重差分法, CAN总线, WHO指南, DO浓度).
  新 binds to the concept word after it (新工科, 新辅助治疗; 新发展理念 through the study word).
  A Roman numeral belongs to the type, stage or grade it numbers (Ⅱ型糖尿病, Ⅲ期, Ⅳ级).
  Two digits and 后 are a generation (90后, 00后).
  值 or 基 left alone after a Latin name or letter is its suffix (pH值, K值, Ni基).
  A marker before the letter naming cells leaves the letter to them (CD4+T细胞: CD4+, T细胞).
  第, a number and its measure word are one term (第585条, 第2类, 第Ⅱ类, 第7次; 民法典第1186条).
  A study word that is part of a concept's name stays in it (企业价值, 情景分析 | 情景, Meta分析, 目标
  检测, 技术进步, 比较优势, 持续改进); a year written against the topic is dropped as a study word
  (2020年新冠疫情), and so is 中国 unless written against a Han concept word (中国方案); a
  temperature is one term (25℃, -20℃, 25~35℃); a quantity (3-6岁, 5%: `query/quantity.py`) keeps the
  bounds around it (超过60岁, 60岁以上老年人) and is no concept alone.
- Han runs are cut without the segmenter's HMM guesser; a run of two or more single characters
  that are not all function words is an unknown word and is put back together (碳/达/峰 -> 碳达峰),
  and a lone single character binds to the next word (大/语言 -> 大语言, 非/独立 -> 非独立); such
  a rebuilt word never spans 的 (traditional characters come one by one: 幻/覺/問/題/的/緩/解), nor a
  conjunction between two words (碳/中/和/与 绿色金融 -> 碳中和; A股/和/港股; 碳/中/和/和/碳/达/峰).
- English questions: stop words (but a capital A or I ending the words or after a word it grades: hepatitis A, type I diabetes; `I need`, `A systematic review` are the pronoun and article), question and relational verbs (does, affect, help, between …),
  pronouns and request words (please find papers) split a Latin run; impact/effect/role … are
  dropped when they stand alone beside another concept, as the study-type words below are.
- Function words and question boilerplate (的, 与, 在…中, 如何, 有哪些, 是什么, 基于 ...) separate
  concepts and are dropped; 或/或者 written right between two concepts makes them one concept's
  alternatives (碳达峰或碳中和, 人工智能或机器学习在医疗中的应用: `concept_choices`); study-type words (研究, 方法, 问题, 影响, 应用, 现状, 对策 ...) and
  aim verbs (缓解, 提高 ...) are dropped when some other concept remains, so 影响 survives only
  when it is the topic.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cnki_mcp.query.jieba_cut import (  # noqa: F401  the server's segmenter, imported from here
    WARM_DELAY_SECONDS,
    JiebaSegmenter,
    default_segmenter,
    dictionary_pending,
    warm_in_background,
    warm_quietly,
)
from cnki_mcp.query.latin import (
    ENGLISH_SOFT,
    ENGLISH_STOP,
    _acronym,
    _latin_words,
    _run_side,
)
from cnki_mcp.query.quantity import (
    BOUNDS,
    LEAD_BOUNDS,
    QUANTITY_TOKEN_RE,
    TEMPERATURE_RE,
    measure_word,
    percentage,
    quantity,
    sample_count,
)

Segmenter = Callable[[str], list[str]]
"""Cuts a run of Han text into words (no whitespace, no Latin)."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words: always concept boundaries, never concepts.
FUNCTION_WORDS = _words(
    """
    的 地 得 之 与 和 跟 及 以及 或 或者 还是 并 并且 而 而且 对 对于 在 于
    中 之中 下 上 内 里 时 之间 当中 为 是 有 从 把 被 将 由 其 该 这 那
    这些 那些 这个 那个 等 等等 及其 基于 关于 有关 针对 面向 通过 以 向 给 所
    如何 怎样 怎么 怎么样 什么 哪些 哪个 哪种 哪里 为什么 为何 是否 能否 可否
    有没有 有无 吗 呢 吧 啊 了 着 呀 请 帮 帮我 我 我们 你 您 一下 一些 多少
    几 几种 哪 何 怎 有哪些 是什么 什么样 如何进行 可以 能够 应该 需要 需 要 进行
    开展 存在 具有 目前 当前 现阶段 现在 最新 主要 常见 相关 具体 一般 各种 不同
    方面 情况 领域 角度 视角 视域 背景 下的 中的 里的 上的 作为 用于 对比 以来
    查找 后 之后 以后 前 之前 以前 期间 时期 我国 国内外 找 查 查询 了解 介绍 总结
    梳理 整理 列举 给出 告诉 看看 为例 例 最好 几篇 一篇 几个 以上 以下
    想 想要 希望 特别 特别是 尤其 尤其是 比如 比如说 例如 包括
    """
)

# Study-type nouns and aim verbs: dropped while some other concept remains.
SOFT_WORDS = _words(
    """
    研究 方法 方法论 问题 影响 应用 分析 探讨 探究 探析 探索 浅析 初探 综述 述评
    评述 进展 研究进展 现状 发展 趋势 对策 策略 措施 建议 途径 路径 机制 机理 作用
    效果 效应 关系 因素 原因 意义 价值 思考 启示 实践 方式 手段 特点 特征 规律
    模式 类型 内容 角色 挑战 困境 出路 前景 展望 问题研究 关键技术 核心技术 技术
    作用机制 影响因素 构建 建设 实现 运用 利用 使用 采用 缓解 解决 提高 提升 改善
    促进 应对 减少 降低 避免 助力 推动 加强 优化 主要 新 有效 文献 论文 资料 变化
    目标 文章 发表 刊发 刊登 改进 比较 实证 实证分析 实证研究 危险因素 风险因素 引起 导致 造成
    """
)

# The country a CNKI record is about unless it says otherwise (我国 is a function word). Alone beside
# another concept, or written against a Latin name (中国OFDI), it only widened or narrowed the search
# by a word papers need not write, and is dropped as a study word is; written against a Han concept
# word it names the concept with it (中国方案, 中国道路, 中国制造, 讲好中国故事) and stays in the joined
# term, but is no alternative of its own (`query/plan.py` `_run_group`).
CONTEXT_WORDS = _words("中国 国内")

# Single characters that are suffixes in Chinese word formation (区块链, 现代化, 稳定性): a lone
# one binds to the word before it; any other lone character binds to the word after it.
_SUFFIX_SINGLES = frozenset("化性型率度者式法器机学论链网业界量感力体物品员家素症剂丸汤散膏丹")
_LEADING_SINGLES = _words("的 地 得 在 对 从 于 为 把 被 将 由 向 以 与 和 及 或 是 有 请")
_TRAILING_SINGLES = _words("的 地 得 了 吗 呢 吧 啊 时")
_PLACE_SINGLES = _words("中 上 下 里 内")
# prepositions that end no unknown word: 二甲/双/胍/对 (the Han text stopped at 2型) is 双胍 and 对
_PREPOSITIONS = _words("对 在 从 把 被 向 将")

# A Latin run: letters/digits joined by - + . / _ # & (R&D, M&A), an optional version number after a space
# (Wi-Fi 8, GPT 4o), words separated by single spaces kept together (deep learning).
# Greek letters written against Latin letters, digits or joiners are letters of the name (TNF-α,
# NF-κB, IL-1β, Wnt/β-catenin, α-SMA); a Greek letter against a Han word belongs to that word.
_GREEK = "\u0391-\u03a9\u03b1-\u03c9"
_LATIN_WORD = rf"[A-Za-z0-9{_GREEK}][A-Za-z0-9{_GREEK}]*(?:[-+./_#&][A-Za-z0-9+#{_GREEK}]*)*\+*"
# 第 and a number (Arabic or Roman) with its measure word are one term (第585条, 第2类, 第II类, 第5代)
_ORDINAL = r"第(?:\d+|[IVX]+)[条款章节项篇类代次批届轮名位例]"
_LATIN_RE = re.compile(rf"{_ORDINAL}|{_LATIN_WORD}(?:[ \t]+{_LATIN_WORD})*")
# one Han character (CJK ideographs: Ext. A, URO, compatibility, Ext. B onwards)
HAN_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
# a Han run ends before 第 and a number (民法典第1186条: 民法典, 第1186条) and before 零下 and a number
_HAN_RE = re.compile(rf"(?:(?!{_ORDINAL}|零下\d){HAN_CHAR.pattern})+")
def _dates(number: str, piece: str, cut: Segmenter) -> bool:
    """Whether a year and the 年 starting the Han text after it are written against a topic word
    (2020年新冠疫情, 2021年违约金调整): a date of the topic, which no paper is indexed by, dropped
    beside other concepts (`_is_soft`) and never glued to the word (2021年违约金 is no word). Apart
    from the topic (2015年的, 2015年前后) the year stays a concept; 年度, 年代 are words of their own."""
    if not re.fullmatch(r"(?:19|20)\d\d", number) or piece[0] != "年" or len(piece) < 2:
        return False
    words = [w for w in cut(piece) if w.strip()]
    return words[0] == "年" and _concept_word(_han_words(piece[1:], cut)[0])
_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
# One Latin letter (with a number: B12) or Greek letters, written against a Han word, belong to it:
# A股, X射线, T细胞, Z世代, 维生素D, γ射线, α-淀粉酶, β受体 (a number does the same: 2型糖尿病).
_LETTER_RE = re.compile(rf"[A-Za-z]\d*|[{_GREEK}]+-?")
# Greek letters not followed by a Latin letter or digit (α-SMA and β-catenin are Latin names)
_GREEK_RE = re.compile(rf"[{_GREEK}]+(?:-(?![A-Za-z0-9])|(?![-A-Za-z0-9]))")
# A name's prefix ending in a hyphen, written against the Han word it names (D-二聚体, L-谷氨酸,
# N-乙酰半胱氨酸, 5-氟尿嘧啶): it belongs to that word, as a letter does, and is no term alone.
_PREFIX_RE = re.compile(rf"[A-Za-z0-9{_GREEK}]+-")
# A Roman numeral (Ⅱ, Ⅳ are II, IV after NFKC) written against the type, stage or grade it
# numbers is part of that word, as a digit is (Ⅱ型糖尿病, Ⅲ期临床试验, Ⅳ级胶质瘤, Ⅰ类)
_ROMAN_RE = re.compile(r"(?=[IVX])X?(?:IX|IV|V?I{0,3})")
_NUMBERED = frozenset("型期级类度代相")


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    latin: bool = False
    boundary_before: bool = False  # a separator (space, punctuation) precedes it
    dated: bool = False  # a year written against the topic after it (2020年新冠疫情): a study word
    bare: bool = False  # a percentage naming nothing after it (超过5%的): a boundary, as a function word


# Conjunctions that end no unknown word: written after one (碳/中/和/与 绿色金融), they join it to the
# next concept. 和 ends words (碳中和, 中和), so it is the conjunction only after a lone character
# (A股/和/港股: 股和 is no word) or after another 和 (碳中和和碳达峰).
_JOINING_SINGLES = frozenset("与及或")


def _joins(piece: list[str], ch: str, more: bool) -> bool:
    """Whether `ch`, after `piece` (single characters) and before more text, is a conjunction."""
    if not piece or not more:
        return False
    if ch in _JOINING_SINGLES:
        return True
    return ch == "和" and (len(piece) == 1 or piece[-1] == "和")


def _rebuilt(singles: list[str], followed: bool = False) -> list[str]:
    """Single characters put back together as unknown words, cut at 的 (which never starts or ends
    one; a place word before it, the 中 of 在…中的, goes with it) and at a conjunction between two
    words (`_joins`; `followed`: a word comes after the last character): a segmenter without the
    words of a text (traditional characters: 幻/覺/問/題/的/緩/解) returns it one character at a time."""
    out: list[str] = []
    piece: list[str] = []
    for k, ch in enumerate([*singles, "的"]):
        if k < len(singles) and _joins(piece, ch, followed or k + 1 < len(singles)):
            out.extend(["".join(piece)] if len(piece) >= 2 else piece)
            out.append(ch)
            piece = []
            continue
        if ch in SOFT_WORDS and piece:  # 新 starts words (新工科), ends none (碳/中/和/新/技术)
            out.extend(["".join(piece)] if len(piece) >= 2 else piece)
            piece = []
        if ch != "的":
            piece.append(ch)
            continue
        tail: list[str] = []
        while piece and piece[-1] in _PLACE_SINGLES:
            tail.insert(0, piece.pop())
        out.extend(["".join(piece)] if len(piece) >= 2 else piece)
        out.extend([*tail, ch])
        piece = []
    return out[:-1]


def _han_words(run: str, cut: Segmenter) -> list[str]:
    """Cut a Han run; rebuild unknown words from single characters (see the module docstring)."""
    words = [w for w in cut(run) if w.strip()]
    out: list[str] = []
    i = 0
    while i < len(words):
        if len(words[i]) > 1:
            out.append(words[i])
            i += 1
            continue
        j = i
        while j < len(words) and len(words[j]) == 1:
            j += 1
        singles = words[i:j]
        i = j
        # prepositions before and particles after a run of single characters stay separate
        lead: list[str] = []
        while singles and singles[0] in _LEADING_SINGLES:
            lead.append(singles.pop(0))
        trail: list[str] = []
        while singles and (singles[-1] in _TRAILING_SINGLES or (singles[-1] in _PREPOSITIONS and len(singles) > 1)):
            trail.insert(0, singles.pop())
        if all(s in FUNCTION_WORDS for s in singles):
            out.extend([*lead, *singles, *trail])
            continue
        out.extend([*lead, *_rebuilt(singles, followed=bool(trail) or i < len(words)), *trail])
    # a lone non-function single character binds to its neighbour (a suffix to the word
    # before it, any other to the word after it, else the one before)
    merged: list[str] = []
    carry = ""
    for k, word in enumerate(out):
        if len(word) == 1 and word in SOFT_WORDS and _names_kind(out[k + 1 : k + 3]):
            # 新 written against a concept word names a new kind of it (新工科, 新高考, 新辅助
            # = neoadjuvant), or with a study word before one (新发展理念, 新发展格局): it binds as
            # any lone character does; alone (新方法, 新的) it is dropped
            carry += word
            continue
        if len(word) == 1 and word not in FUNCTION_WORDS and word not in SOFT_WORDS:
            nxt = out[k + 1] if k + 1 < len(out) else None
            if word in _SUFFIX_SINGLES and not carry and merged and merged[-1] not in FUNCTION_WORDS:
                merged[-1] += word
                continue
            if nxt is not None and nxt not in FUNCTION_WORDS:
                carry += word
                continue
            if merged and merged[-1] not in FUNCTION_WORDS:
                merged[-1] += carry + word
                carry = ""
                continue
        merged.append(carry + word)
        carry = ""
    if carry:
        merged.append(carry)
    return _compounds(_formulas(merged))


# Dosage forms ending a TCM formula's name, and words written before a formula that are no part of it
_DOSAGE_FORMS = frozenset("丸汤散膏丹")
_TAKING = _words("服用 口服 内服 外用 外敷 给予 加用 联合 中药 方剂 经方 古方 传统 临床")


def _formulas(words: list[str]) -> list[str]:
    """A formula's name the segmenter cut before its dosage form (补/中/益气汤, 参苓/白术散, 桂枝/茯苓丸,
    黄连/上清丸) made whole: a name of five characters (four and the form, as most are) ending in a
    word of two or three characters with the form, pieced together from the Han words before it with
    no function word (中, 上 inside the name aside) or study word. A two-character word with the form
    (牡丹, 石膏, 分散, 鸡汤) and a name already whole (六味地黄丸, 逍遥散) are left as they are."""
    out: list[str] = []
    for word in words:
        name = [word]
        if word[-1] in _DOSAGE_FORMS and len(word) == 3 and HAN_CHAR.match(word):
            for piece in reversed(out):
                if (
                    not HAN_CHAR.match(piece)
                    or (piece in FUNCTION_WORDS and piece not in _PLACE_SINGLES)
                    or piece in SOFT_WORDS
                    or piece in _TAKING
                ):
                    break
                name.insert(0, piece)
                if sum(map(len, name)) >= 5:
                    break
            if sum(map(len, name)) != 5 or name[0] in _PLACE_SINGLES:
                name = [word]
        del out[len(out) - len(name) + 1 :]
        out.append("".join(name))
    return out


# Study words that, written right after a concept word of at most three characters, are the head of
# the concept's name, no study type: 企业价值, 静态分析, 空间分析, 有限元分析, 分子机制
# (the segmenter cut them: 企业/价值); after a study word (研究价值, 应用分析) they stay study words.
_HEADS = frozenset({"价值", "分析", "机制"})
# Study words that, written right before a concept word, modify it: 目标检测, 目标跟踪, 技术进步, 技术溢出;
# after a name of three characters or more they are its head (区块链技术, 人工智能技术, 碳中和目标) and
# modify nothing after them (区块链技术农产品: 区块链, 农产品). For 技术 the name is all the concept
# words before it when a concept word follows (机器/学习技术预测股票价格: 机器学习, 预测, `_name_before`);
# otherwise the last word (深度/学习目标跟踪: 目标跟踪; 制造业企业技术进步: 技术进步)
_MODIFIERS = frozenset({"目标", "技术"})
# What 技术 modifies after a name of any length (外资企业技术溢出: 外资企业, 技术溢出): technology as
# what is passed on, changed or compared, in economics' terms
_TECHNOLOGY_OF = _words("溢出 进步 转移 扩散 引进 效率 追赶 差距 升级 改造 壁垒 许可")
# What 目标 (target) modifies (深度学习目标跟踪, 企业目标管理, 目标函数); before other words it is the head
# (goal) of the two-character concept word before it (教学目标达成度: 教学目标, 达成度)
_TARGETED = _words("检测 跟踪 识别 定位 追踪 探测 分割 函数 规划 管理 成本 市场 客户 人群 群体 导向 责任")
# Words a concept word before them forms a name with (持续改进, 质量改进: quality-management methods);
# elsewhere they are study words (目标检测算法改进, 改进遗传算法)
_NAMED_WITH = {"改进": frozenset({"持续", "质量"})}
# 比较 written before a discipline (…学, …法) or 优势, with no concept word before it, names a field
# (比较教育学, 比较政治学, 比较法学) or the economics term (比较优势); elsewhere it is the study word
# (中美高等教育比较研究, 物流模式比较分析, 比较中美两国)
def _names_field(prev: str, word: str, before: str) -> bool:
    return (
        prev == "比较"
        and (word.endswith(("学", "法")) or word == "优势")
        and _concept_word(word)
        and not (before and _concept_word(before))
    )
# Concept words naming a whole domain or scale, which a search in any field matches nearly everywhere:
# without their head (企业价值, 空间分析, 分子机制) they are no alternative of the concept (`headless`)
_BROAD = _words("企业 公司 空间 时间 分子 细胞 社会 经济 文化 政治 市场 国家 系统 结构 环境")


def headless(word: str, cut: Segmenter) -> str:
    """The concept word of a name whose head is a study word (`_HEADS`: 情景分析, 时空分析, 成本分析,
    诊断价值, 耐药机制), which papers on it also write alone (情景预测, 时空演变, 成本控制): an
    alternative of the name. "" for any other word, and for a word too broad alone (`_BROAD`:
    企业价值, 空间分析, 分子机制)."""
    if not HAN_CHAR.match(word) or len(word) > 5:
        return ""
    words = [w for w in cut(word) if w.strip()]
    if len(words) != 2 or words[1] not in _HEADS | {"目标"}:
        return ""
    bare = words[0]
    ok = 1 < len(bare) <= 3 and all(HAN_CHAR.match(ch) for ch in bare) and _concept_word(bare)
    return bare if ok and bare not in _BROAD and bare not in CONTEXT_WORDS else ""


def _name_before(words: list[str], modifier: str, after: list[str]) -> str:
    """The name written right before a modifier (`_MODIFIERS`), whose head it may be: its last
    concept word; for 技术 followed by a concept word that takes an object (机器/学习技术预测股票价格,
    深度/学习技术识别农作物病害: 技术 is the means, the name its head), all the concept words back
    to the last study or function word (机器学习). 技术 ending the words (制造业企业技术进步) names
    what the last word has (技术进步)."""
    k = len(words)
    while k and _concept_word(words[k - 1]):
        k -= 1
        if not (modifier == "技术" and after and _concept_word(after[0])):
            break
    return "".join(words[k:])


def _compounds(words: list[str]) -> list[str]:
    """Words of one Han run with a study word that is part of a concept's name put back into it
    (`_HEADS`, `_MODIFIERS`), and a study word the segmenter cut in two made whole (危险/因素,
    实证/分析: their join is a study word)."""
    out: list[str] = []
    for i, word in enumerate(words):
        prev = out[-1] if out else ""
        before = out[-2] if len(out) > 1 else ""
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if prev and (
            (word == "目标" and len(prev) == 2 and _concept_word(prev) and nxt and _concept_word(nxt) and nxt not in _TARGETED)
            or prev + word in SOFT_WORDS
            or (word in _HEADS and _concept_word(prev) and len(prev) <= 3)
            or (
                prev in _MODIFIERS
                and _concept_word(word)
                and len(word) > 1
                and (
                    len(_name_before(out[:-1], prev, words[i + 1 : i + 2])) < 3
                    or (prev == "技术" and word in _TECHNOLOGY_OF)
                )
            )
            or prev in _NAMED_WITH.get(word, ())
            or (prev == "新型" and _concept_word(word) and before and _concept_word(before))  # 防治/新型/冠状病毒
            or _names_field(prev, word, before)
        ):
            out[-1] = prev + word
            continue
        out.append(word)
    return out


# An English possessive (China's, firms'): the apostrophe split the word off as a term of its own
# (`China` / `s A-share market`); the owner is the word.
_POSSESSIVE_RE = re.compile(r"(?<=[A-Za-z])['’]s\b|(?<=[A-Za-z]s)['’](?=\s|$)")


# A marker written before the one letter naming the cells after it (CD4+T细胞, CD8+ T细胞, CD3+T淋巴细胞);
# before other Han text `X+Y` is one term (EPC+F模式, EPC+O, A+H股)
_MARKER_CELL_RE = re.compile(r"[A-Za-z0-9]\+ ?([A-Z])$")
_CELLS_RE = re.compile(r"细胞|淋巴细胞")


def _tokens(text: str, cut: Segmenter) -> list[_Token]:
    text = _POSSESSIVE_RE.sub("", text)
    out: list[_Token] = []
    pos = 0
    number = ""  # a bare number or a letter waiting for the Han word right after it
    number_gap = True  # whether a separator came before that number or letter
    pattern = rf"{TEMPERATURE_RE.pattern}|{QUANTITY_TOKEN_RE.pattern}|{_GREEK_RE.pattern}|{_LATIN_RE.pattern}|{_HAN_RE.pattern}"
    for m in re.finditer(pattern, text):
        gap = m.start() > pos
        pos = m.end()
        piece = m.group(0)
        if m.group(1):  # a temperature
            if number:
                _letter_or_number(out, number, number_gap)
                number = ""
            degrees = re.sub(r"[ \t]", "", m.group(1)).replace("°C", "℃").replace("−", "-")
            out.append(_Token(degrees, latin=True, boundary_before=gap))
            continue
        if m.group(2):  # a percentage (a token of its own), or a range waiting for its measure word
            if number:
                _letter_or_number(out, number, number_gap)
            number, number_gap = re.sub(r"[ \t]", "", piece), gap
            if number[-1] == "%":
                out.append(_Token(number, boundary_before=gap))
                number = ""
            continue
        if _HAN_RE.fullmatch(piece):
            if number and not gap and _dates(number, piece, cut):
                out.append(_Token(number + "年", boundary_before=number_gap, dated=True))
                number, gap, piece = "", True, piece[1:]
            if number and not gap and (measure := measure_word(number, piece, cut)):  # 60岁/老年人
                out.append(_Token(number + measure, boundary_before=number_gap))
                number, piece = "", piece[len(measure) :]
            head = _name_suffix(piece, cut, number) if not gap and (number or (out and out[-1].latin)) else ""
            if head and not number:  # pH值, Ni基: the name's suffix, then the rest of the run
                out[-1] = _Token(out[-1].text + head, latin=True, boundary_before=out[-1].boundary_before)
            words = _han_words(piece[len(head) :], cut) if piece[len(head) :] else []
            if head and number:  # K值
                words, number, gap = [number + head, *words], "", number_gap
            elif number and not gap and words and _numbers(number, words[0]):
                words[0] = number + words[0]
                gap = number_gap
                if number.endswith("-") and len(words[0]) - len(number) <= 2 and _name_goes_on(words):
                    # the segmenter cut the name it prefixes after two characters (α-突触/核蛋白,
                    # β-淀粉/样蛋白, N-乙酰/半胱氨酸): the name goes on into the next word
                    words[:2] = [words[0] + words[1]]
            elif number:
                _letter_or_number(out, number, number_gap)
            number = ""
            out.extend(_Token(w, boundary_before=gap and k == 0) for k, w in enumerate(words))
            continue
        if number:
            _letter_or_number(out, number, number_gap)
            number = ""
        if any(r.fullmatch(piece) for r in (_NUMBER_RE, _LETTER_RE, _PREFIX_RE, _ROMAN_RE)):
            number, number_gap = piece, gap
            continue
        cell = _MARKER_CELL_RE.search(piece) if _CELLS_RE.match(text, m.end()) else None
        if cell:  # CD4+T细胞: the T names the cells (T细胞), CD4+ their marker (as in CD4+ T细胞)
            piece, number, number_gap = piece[: cell.start(1)].rstrip(), cell.group(1), cell.group(0)[-2] == " "
        sides = (
            _run_side(text[: m.start()][::-1], gap or not m.start()),
            _run_side(text[m.end() :], not HAN_CHAR.match(text, m.end())),
        )
        out.extend(
            _Token(w, latin=True, boundary_before=gap or k > 0)
            for k, w in enumerate(_latin_words(piece, *sides))
        )
    if number:
        _letter_or_number(out, number, number_gap)
    return out


# Characters that, left alone by the segmenter right after a Latin name or letter, are its suffix:
# pH值, K值, Ni基 (nickel-based); as lone characters they were rebuilt with the preposition after
# them (pH/值对/吸附) or bound to the word after them (Ni/基高温/合金). 型 and 期 stay with the word
# after them (2型糖尿病, H型高血压, Ⅲ期临床试验).
_NAME_SUFFIXES = frozenset("值基")


# A study word written right after a Latin name that is the head of the method's name: Meta分析,
# SWOT分析 (the study type a researcher asks for, as Chinese records write it)
_LATIN_HEADS = frozenset({"分析"})


def _name_suffix(piece: str, cut: Segmenter, number: str = "") -> str:
    """The first character of a Han run written right after a Latin name, when it is a suffix the
    segmenter left alone (`_NAME_SUFFIXES`), or the head word of a method's name after a Latin name
    (`_LATIN_HEADS`), else ""."""
    first = next((w for w in cut(piece) if w.strip()), "")
    if first in _LATIN_HEADS and not number:
        return first
    if piece[0] not in _NAME_SUFFIXES:
        return ""
    return piece[0] if first == piece[0] else ""


def _numbers(piece: str, word: str) -> bool:
    """Whether a number, letter, prefix or Roman numeral `piece` glues to the Han `word` after it:
    never to a function word but 后 after two digits (a generation: 90后, 00后); a Roman numeral of
    two letters or more only to a type, stage or grade (IV估计 stays apart)."""
    if word in FUNCTION_WORDS:
        return word == "后" and len(piece) == 2 and piece.isdigit()
    return len(piece) < 2 or not _ROMAN_RE.fullmatch(piece) or word[0] in _NUMBERED


def _concept_word(word: str) -> bool:
    return word not in FUNCTION_WORDS and word not in SOFT_WORDS


# Words any topic has a new one of (a method, an idea, a result) or that say it was newly issued:
# 新 before them is the adjective "new" (基于新算法的, 图像去噪新算法, 新修订的公司法), no kind of
# thing, and is dropped as before a study word. Before other concept words 新 names a kind
# (新工科, 新高考, 新零售, 新基建, 新材料).
_NEW_GENERIC = _words(
    """
    算法 模型 思路 方案 理论 框架 举措 机遇 形势 要求 方向 观点 办法 成果 发现 局面 版本 形式 范式
    视野 视域 突破 工具 修订 修正 出台 颁布 发布 实施
    """
)


def _names_kind(after: list[str]) -> bool:
    """The words after a lone 新 (at most two): a concept word, or a study word and a concept word,
    that is no generic word (`_NEW_GENERIC`)."""
    if after and after[0] in SOFT_WORDS and len(after[0]) > 1:
        after = after[1:]
    return bool(after) and _concept_word(after[0]) and after[0] not in _NEW_GENERIC


def _name_goes_on(words: list[str]) -> bool:
    return len(words) > 1 and _concept_word(words[1])


def _letter_or_number(out: list[_Token], piece: str, gap: bool) -> None:
    """A number or letter no Han word follows: a letter written against the Han word before it is
    that word's suffix (维生素D, 维生素B12); anything else is a term of its own."""
    if _LETTER_RE.fullmatch(piece) and not _NUMBER_RE.fullmatch(piece) and not gap and out and not out[-1].latin:
        out[-1] = _Token(out[-1].text + piece, boundary_before=out[-1].boundary_before)
        return
    out.append(_Token(piece, latin=True, boundary_before=gap))


def _is_function(token: _Token) -> bool:
    return token.bare or (not token.latin and token.text in FUNCTION_WORDS)


def _is_soft(token: _Token) -> bool:
    if token.latin:
        return token.text.casefold() in ENGLISH_SOFT
    return token.dated or token.text in SOFT_WORDS


def _lone_context(tokens: list[_Token], compared_kept: bool = True) -> set[int]:
    """Indices of context words (`CONTEXT_WORDS`) written against no Han concept word: alone
    (数字经济在中国的发展) or against a Latin name (中国OFDI). Against one (中国方案, 讲好中国故事)
    the word names the concept with it; joined by a conjunction to another one (中国与印度经济比较,
    中国与东盟贸易) it is one of the two things compared and stays (`compared_kept`; `_linked_runs` drops
    it when it would be one of three concepts and only widen the aspects, 美国和中国的贸易摩擦, unless
    the question opens with the comparison: `_compared_with_china`)."""

    def concept(k: int, latin: bool = False) -> bool:
        t = tokens[k]
        return (latin or not t.latin) and not _is_function(t) and not _is_soft(t) and t.text not in CONTEXT_WORDS

    def compared(k: int, step: int) -> bool:
        j, other = k + step, k + 2 * step
        return (
            min(j, other) >= 0
            and other < len(tokens)
            and not tokens[j].latin
            and tokens[j].text in _COMPARING
            and not any(tokens[x].boundary_before for x in (max(k, j), max(j, other)))
            and concept(other, latin=True)
        )

    out: set[int] = set()
    for k, t in enumerate(tokens):
        if t.latin or t.text not in CONTEXT_WORDS:
            continue
        after = k + 1 < len(tokens) and not tokens[k + 1].boundary_before and concept(k + 1)
        before = k > 0 and not t.boundary_before and concept(k - 1)
        if not (after or before or (compared_kept and (compared(k, 1) or compared(k, -1)))):
            out.add(k)
    return out


_COMPARING = _words("与 和 及 同 跟")


_YEAR = re.compile(r"(?:1[89]|20)\d\d年")


def _bounded_quantities(tokens: list[_Token]) -> list[_Token]:
    """以上/以下 (and 及以上) written between a quantity and a concept word is part of the name of the
    group it bounds (60岁以上老年人, 二级以上医院, 3个月以下婴儿): joined to the quantity, the run
    stays whole. Elsewhere (after a temperature, 100℃以上; ending the run, 10岁以下) they are function
    words and are dropped. A bound written right before a quantity is part of it (超过60岁老年人); a
    percentage no concept word follows names nothing and is dropped (超过5%的股权质押)."""
    out: list[_Token] = []
    k = 0
    while k < len(tokens):
        t = tokens[k]
        bound = [x.text for x in tokens[k : k + 2]]
        n = 2 if bound[:1] == ["及"] and bound[1:] and bound[1] in BOUNDS else 1
        nxt = tokens[k + n] if k + n < len(tokens) else None
        named = nxt is not None and not nxt.boundary_before and not nxt.latin and _concept_word(nxt.text)
        if (
            out
            and not out[-1].latin
            and quantity(out[-1].text)
            and "".join(bound[:n]) in {"以上", "以下", "及以上", "及以下"}
            and not any(x.boundary_before or x.latin for x in tokens[k : k + n])
            and named
        ):
            out[-1] = _Token(out[-1].text + "".join(bound[:n]), boundary_before=out[-1].boundary_before)
            k += n
            continue
        # the bound, also as the segmenter cut it (不少/于 6个月), and the quantity after it
        for m in (1, 2):
            at = tokens[k + 1 : k + m + 1]
            if (
                len(at) == m
                and t.text + "".join(x.text for x in at[:-1]) in LEAD_BOUNDS
                and not any(x.boundary_before or x.latin for x in at)
                and quantity(at[-1].text)
            ):
                t = _Token(t.text + "".join(x.text for x in at), boundary_before=t.boundary_before)
                k += m
                break
        out.append(t)
        k += 1
    following = [*out[1:], None][: len(out)]
    preceding = [None, *out[:-1]]

    def against(t: _Token, other: _Token | None) -> bool:  # `other` is a concept word written against `t`
        return other is not None and not t.boundary_before and not other.latin and _concept_word(other.text)

    return [
        _Token(t.text, boundary_before=t.boundary_before, bare=True)
        if (not t.latin and sample_count(t.text))
        or (percentage(t.text) and not (nxt and not nxt.boundary_before and against(nxt, nxt)))
        or (
            # a quantity naming nothing (3年的随访, 10岁以下的儿童): none after it, none it measures
            # before it (体重低于2500克); a year stays (`2015年前后`, `2021年的违约金调整`)
            not t.latin
            and quantity(t.text)
            and not _YEAR.fullmatch(t.text)
            and not (nxt and not nxt.boundary_before and against(nxt, nxt))
            and not against(t, prev)
        )
        else t
        for t, nxt, prev in zip(out, following, preceding, strict=True)
    ]


# 或 / 或者 written between two concepts (碳达峰或碳中和): the two are alternatives, one concept.
_OR_JOINERS = frozenset({"或", "或者"})


def _linked_runs(text: str, cut: Segmenter) -> list[tuple[list[str], bool]]:
    """`concept_runs`, each with whether it is an alternative of the run before it: 或/或者 stands
    right between the two (no other dropped word, and the earlier run was not left out)."""
    text = unicodedata.normalize("NFKC", text)
    tokens = _bounded_quantities(_tokens(text, cut))
    content = [t for t in tokens if not _is_function(t)]
    strong = any(not _is_soft(t) and t.text not in CONTEXT_WORDS for t in content)
    context = _lone_context(tokens) if strong else set()
    other = _compared_with_china(tokens, context)
    out = _runs_of(tokens, context, other)
    if len(out) > 2 and other is None and strong and (fewer := _lone_context(tokens, compared_kept=False)) != context:
        out = _runs_of(tokens, fewer)
    return out


def _compared_with_china(tokens: list[_Token], context: set[int]) -> int | None:
    """The index of the concept word a question opens by comparing 中国 with (中国与日本老龄化政策比较,
    中国与印度的经济发展比较: 日本, 印度): both are required concepts, the other country a run of its own
    (`_runs_of` ends the run after it) and not one alternative among the aspects, so the plan is
    中国 AND 日本 AND 老龄化政策 (`query/plan.py` `_sentence_groups`). None when 中国 is no such topic."""
    k = next((i for i, t in enumerate(tokens) if not (_is_function(t) or _is_soft(t))), None)
    if k is None or k in context or tokens[k].latin or tokens[k].text not in CONTEXT_WORDS or k + 2 >= len(tokens):
        return None
    conj, other = tokens[k + 1], tokens[k + 2]
    if conj.latin or conj.text not in _COMPARING or conj.boundary_before or other.boundary_before:
        return None
    return k + 2 if not (_is_function(other) or _is_soft(other) or other.text in CONTEXT_WORDS) else None


def _runs_of(tokens: list[_Token], context: set[int], other: int | None = None) -> list[tuple[list[str], bool]]:
    has_strong = any(not _is_soft(t) for t in tokens if not _is_function(t))
    runs: list[list[str]] = [[]]
    alternative: set[int] = set()  # indices of runs written right after 或 that follows a run
    kept_before = False  # the token before was kept as a concept word
    after_or = False  # 或 came right after a concept word, and nothing since
    for k, t in enumerate(tokens):
        dropped = _is_function(t) or (has_strong and _is_soft(t)) or k in context
        if (dropped or t.boundary_before or t.latin) and runs[-1]:
            runs.append([])
        if dropped:
            after_or = kept_before and not t.latin and t.text in _OR_JOINERS
            kept_before = False
            continue
        if after_or and not runs[-1]:
            alternative.add(len(runs) - 1)
        after_or = False
        kept_before = True
        runs[-1].append(t.text)
        if t.latin or k == other:
            runs.append([])
    out: list[tuple[list[str], bool]] = []
    seen: set[str] = set()
    last_kept = False  # the last non-empty run was kept
    for k, run in enumerate(runs):
        if not run or all(w in LEAD_BOUNDS for w in run):  # a bound alone names nothing (超过 的…)
            continue
        keys = [w.casefold() for w in run]
        kept = not set(keys) <= seen
        if kept:
            out.append((list(dict.fromkeys(run)), k in alternative and last_kept))
        seen.update(keys)
        last_kept = kept
    return out


def concept_runs(text: str, cut: Segmenter) -> list[list[str]]:
    """The concept words of a question grouped into runs: words written next to each other with
    no function word, dropped word or separator between them (自动/驾驶/汽车 is one run).
    A run whose words were all seen in earlier runs is left out (a repeated concept); a run with a
    new word keeps its repeated ones, so a compound stays whole (深度学习与机器学习: 机器/学习)."""
    return [run for run, _ in _linked_runs(text, cut)]


def concept_choices(text: str, cut: Segmenter) -> list[list[list[str]]]:
    """`concept_runs` with runs joined by 或/或者 put together as one concept's alternatives:
    人工智能或机器学习在医疗中的应用 -> [[人工智能], [机器, 学习]], [[医疗]]."""
    out: list[list[list[str]]] = []
    for run, alternative in _linked_runs(text, cut):
        if alternative and out:
            out[-1].append(run)
        else:
            out.append([run])
    return out


def has_function_words(text: str, cut: Segmenter) -> bool:
    """Does the text contain a function word or an English stop word written as a word of its own
    (a phrase or sentence rather than one term: please find papers about federated learning)?"""
    text = unicodedata.normalize("NFKC", text)
    words = text.split()
    if any(
        w.isascii() and w.isalpha() and w.casefold() in ENGLISH_STOP and not _acronym(w, words, k)
        for k, w in enumerate(words)
    ):
        return True
    return any(_is_function(t) for t in _tokens(text, cut))


def question_concepts(text: str, cut: Segmenter) -> list[str]:
    """The concept words of a question, in order, without duplicates (see the module docstring)."""
    return list(dict.fromkeys(w for run in concept_runs(text, cut) for w in run))


def merge_to(concepts: Sequence[str], limit: int) -> list[str]:
    """Join neighbouring concepts (the shortest pair first) until at most `limit` remain."""
    out = list(concepts)
    while len(out) > limit:
        k = min(range(len(out) - 1), key=lambda i: (len(out[i]) + len(out[i + 1]), i))
        out[k : k + 2] = [out[k] + out[k + 1]]
    return out
