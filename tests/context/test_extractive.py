"""Extractive tiers read as sentences of the document, whatever its source format."""

import re

from context.extractive import ABSTRACT_MAX_CHARS, POINT_MAX_CHARS, extractive_tiers

MARKDOWN = """# Setup

Install the package. Then run the server. It listens on port 8000. Logs go to stderr.

## Search

Hybrid search merges BM25 and vectors. RRF does the merge.

## Limits

Chunks are capped at 800 characters.
"""

# What pypdf gives for a printed rules sheet: one line per printed line, numbered
# rules, a number left alone on its line, a sentence cut by the page break.
GARDEN_PDF = """Hartwell Community Garden: Plot Rules 2026
1. Plots are assigned each March by lottery among the members who have paid
their yearly fee.
2. Water only in the early morning or the evening; hoses need a trigger nozzle.
3.
Compost bins are shared and must never hold cooked food or meat.

4. Paths between the plots must be kept clear so that wheelbarrows can
pass, and the committee checks them every
month during the season.
Name | Plot | Size
Ada | 12 | 10 m²"""

GARDEN_ZH = """# 哈特韦尔社区花园地块规则

一、每年三月通过抽签分配地块，只有已缴年费的会员可以参加。
二、只能在清晨或傍晚浇水，水管必须装有扳机式喷头。
（三）堆肥箱由大家共用，不得放入熟食或肉类

## 通道

地块之间的通道必须保持畅通。委员会每月检查一次。"""


def _points(overview: str) -> list[str]:
    assert all(line.startswith("- ") for line in overview.splitlines()), overview
    return [line[2:] for line in overview.splitlines()]


def test_markdown_sections_give_their_first_sentences():
    abstract, overview = extractive_tiers("Guide", MARKDOWN)
    assert abstract == "Install the package. Then run the server. It listens on port 8000."
    assert _points(overview) == [
        "Setup: Install the package.",
        "Search: Hybrid search merges BM25 and vectors.",
        "Limits: Chunks are capped at 800 characters.",
    ]


def test_a_pdf_rules_sheet_reads_as_whole_sentences_without_numbers_or_title():
    abstract, overview = extractive_tiers("Plot rules", GARDEN_PDF)
    assert abstract == (
        "Plots are assigned each March by lottery among the members who have paid their "
        "yearly fee. Water only in the early morning or the evening; hoses need a trigger "
        "nozzle. Compost bins are shared and must never hold cooked food or meat.")
    assert _points(overview) == [
        "Plots are assigned each March by lottery among the members who have paid their "
        "yearly fee.",
        "Water only in the early morning or the evening; hoses need a trigger nozzle.",
        "Compost bins are shared and must never hold cooked food or meat.",
        "Paths between the plots must be kept clear so that wheelbarrows can pass, and the "
        "committee checks them every month during the season.",
    ]
    assert "Hartwell" not in abstract + overview and "|" not in overview


def test_chinese_keeps_its_script_markers_stripped_and_no_spaces_added():
    abstract, overview = extractive_tiers("花园规则", GARDEN_ZH)
    assert abstract == ("每年三月通过抽签分配地块，只有已缴年费的会员可以参加。"
                        "只能在清晨或傍晚浇水，水管必须装有扳机式喷头。"
                        "堆肥箱由大家共用，不得放入熟食或肉类。")  # its full stop added
    assert _points(overview) == [
        "哈特韦尔社区花园地块规则：每年三月通过抽签分配地块，只有已缴年费的会员可以参加。",
        "通道：地块之间的通道必须保持畅通。",
    ]


def test_without_headings_each_paragraph_or_item_gives_a_point():
    text = ("The rota for team Kestrel\n\nchanges on Mondays.\n\n"
            "- Swaps are agreed in the team channel\n- Ask the lead first\n- Ok\n\n"
            "```\nrota --show all of the weeks\n```\n\n---\n\n仓库每周五下午清点一次。")
    abstract, overview = extractive_tiers("Rota", text)
    assert abstract == ("The rota for team Kestrel changes on Mondays. Swaps are agreed in "
                        "the team channel.仓库每周五下午清点一次。")
    assert _points(overview) == ["The rota for team Kestrel changes on Mondays.",
                                 "Swaps are agreed in the team channel",  # "Ask…": a label
                                 "仓库每周五下午清点一次。"]


def test_tiers_are_bounded_and_cut_at_a_word():
    sentence = "This sentence about the watering schedule goes on " + "and on " * 80 + "."
    text = "\n\n".join(f"# Part {i}\n\n{sentence}" for i in range(12))
    abstract, overview = extractive_tiers("Long", text)
    points = _points(overview)
    assert len(abstract) <= ABSTRACT_MAX_CHARS and re.search(r" (and|on)…$", abstract)
    assert len(points) == 8
    assert all(len(p) <= POINT_MAX_CHARS and re.search(r" (and|on)…$", p) for p in points)
    chinese, _ = extractive_tiers("长", "浇水" * 300 + "。")
    assert len(chinese) == ABSTRACT_MAX_CHARS and chinese.endswith("浇…")


def test_text_without_sentences_falls_back_to_its_first_line_then_the_title():
    assert extractive_tiers("Menu", "Soup\n\nBread") == ("Soup", "")
    assert extractive_tiers("Title only", "") == ("Title only", "")
    assert extractive_tiers("Code", "```\nprint('hello world, this is code')\n```") == (
        "Code", "")


def test_a_title_line_over_a_list_is_left_out_in_any_script():
    for text in ("哈特韦尔社区花园地块规则\n1、每年三月抽签分配地块。\n2、只能在傍晚浇水。",
                 "plot rules for members\n- Plots are drawn each March.\n- Water at dusk."):
        abstract, overview = extractive_tiers("T", text)
        assert "规则" not in abstract and "rules" not in abstract, abstract
        assert len(_points(overview)) == 2


# A manual's first pages as pypdf reads them: a title page of names, a table of
# contents with dot leaders, numbered section headings, a word hyphenated at a line end.
MANUAL_PDF = """Libtasn1
Abstract Syntax Notation One (ASN.1) library for the GNU system
for version 4.19.0, 18 August 2022
Fabio Fiorina
Simon Josefsson

Table of Contents
1 Introduction . . . . . . . . . . . . . . . . . 1
2 ASN.1 structure handling . . . . . . . . . . 2

1. Introduction
1.1. What is this manual?
This manual is for GNU Libtasn1, a library for Distinguished Encoding Rules manip-
ulation.
1.2. Language used in this manual
The key words MUST and SHOULD are to be read as in RFC 2119."""


def test_a_manuals_title_page_contents_and_section_numbers_are_left_out():
    abstract, overview = extractive_tiers("Libtasn1", MANUAL_PDF)
    assert abstract == ("This manual is for GNU Libtasn1, a library for Distinguished Encoding "
                        "Rules manipulation. The key words MUST and SHOULD are to be read as "
                        "in RFC 2119.")
    assert _points(overview) == abstract.replace("n. The", "n.\nThe").splitlines()


def test_a_pdf_page_without_blank_lines_falls_into_its_paragraphs():
    page = ("The embedding model is nomic-embed-\ntext, which runs locally on the same machine "
            "as the\nservice.\nVectors have 768 dimensions and are stored beside the chunks "
            "they\ncame from.")
    _abstract, overview = extractive_tiers("Vectors", page)
    assert _points(overview) == [
        "The embedding model is nomic-embed-text, which runs locally on the same machine as "
        "the service.",
        "Vectors have 768 dimensions and are stored beside the chunks they came from."]
