"""Page gate and header identity: status/URL rules, visible markers only, real captures."""

from __future__ import annotations

import pytest

from cnki_mcp.errors import CnkiError
from cnki_mcp.models import GateKind, GateVerdict, IdentityKind
from cnki_mcp.parse.gate import challenge_url, classify_page, raise_for_verdict, read_header_identity
from tests.conftest import read_real

PLAIN = "<html><head><title>检索-中国知网</title></head><body><p>普通页面</p></body></html>"
GRID_ROW = (
    "<table class='result-table-list'><tbody><tr><td class='name'><a class='fz14' href='/a'>题名</a></td>"
    "</tr></tbody></table>"
)


def _kind(html: str, url: str | None = None, status: int | None = None) -> GateKind:
    return classify_page(html, url, status).kind


# --- status and URL rules (site-rules.md §1.4) ----------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (429, GateKind.RATE_LIMITED),
        (401, GateKind.LOGIN),
        (403, GateKind.DENIED),
        (404, GateKind.NOT_FOUND),
        (500, GateKind.SERVER_ERROR),
        (503, GateKind.SERVER_ERROR),
        (200, GateKind.CLEAR),
    ],
)
def test_the_http_status_of_a_plain_page_decides_the_gate_kind(status: int, kind: GateKind) -> None:
    assert _kind(PLAIN, "https://kns.cnki.net/kns8s/search", status) is kind


def test_rate_limit_status_wins_over_challenge_markup() -> None:
    assert _kind('<div id="vericode"></div>', status=429) is GateKind.RATE_LIMITED


@pytest.mark.parametrize(
    "html",
    [
        "<html><head><title> 安全验证 </title></head><body></body></html>",
        '<input id="vericode">',
        "<input id=vericode>",
        "<form name='vericodeForm'></form>",
        "<form name=vericodeForm></form>",
    ],
)
def test_verification_markup_is_a_challenge(html: str) -> None:
    assert _kind(html, status=200) is GateKind.CHALLENGE


def _letter_cases(word: str) -> list[str]:
    """Every spelling of `word` that a case-insensitive pattern of it matches (re.I folds İ and ı to i)."""
    forms = [""]
    for ch in word:
        variants = {ch, ch.upper()} | ({"\u0130", "\u0131"} if ch == "i" else set())
        forms = [f + v for f in forms for v in sorted(variants)]
    return forms


def test_verification_markup_is_found_in_every_letter_case() -> None:
    # The marker is searched through a lowered-text hint first (speed); no spelling may slip by.
    spellings = _letter_cases("vericode")
    assert len(spellings) == 512
    for word in spellings:
        assert _kind(f'<div><input id="{word}"></div>', status=200) is GateKind.CHALLENGE, word
        assert _kind(f"<form name={word}Form></form>", status=200) is GateKind.CHALLENGE, word


def test_challenge_is_checked_before_login_status() -> None:
    assert _kind("<form name=vericodeForm></form>", status=401) is GateKind.CHALLENGE


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://login.cnki.net/login/?ReturnURL=x", GateKind.LOGIN),
        ("https://kns.cnki.net/verify/home?captchaType=blockPuzzle", GateKind.CHALLENGE),
        ("https://kns.cnki.net/kns8s/defaultresult/index", GateKind.CLEAR),
    ],
)
def test_the_address_of_a_plain_page_decides_the_gate_kind(url: str, kind: GateKind) -> None:
    assert _kind(PLAIN, url) is kind


# --- visible markers (site-rules.md §2.5/2.6) -----------------------------------------------------


@pytest.mark.parametrize(
    "marker",
    [
        '<iframe src="https://turing.captcha.qcloud.com/x"></iframe>',
        '<iframe src="/x" title="Verify you are human"></iframe>',
        '<div id="tCaptchaDyMainWrap">拖动下方拼图完成验证</div>',
        '<div class="captcha-dialog"></div>',
        '<div class="geetest_panel"></div>',
        '<div id="nc_1_wrapper"></div>',
        '<div class="tcaptcha-transform"></div>',
        '<div class="read-btn-boxXml"><div class="slider-wrapper"></div>滑动验证</div>',
    ],
)
def test_visible_captcha_markers_are_challenges(marker: str) -> None:
    assert _kind(f"<html><body>{marker}</body></html>") is GateKind.CHALLENGE


def test_hidden_captcha_markup_does_not_count() -> None:
    # kns8s parks its Tencent widget in a wrapper styled opacity 0 and a million pixels up
    parked = (
        '<div id="tcaptcha_transform_dy" style="opacity: 0; position: absolute; top: -1e+06px;">'
        '<div id="tCaptchaDyMainWrap">拖动下方拼图完成验证</div></div>'
    )
    assert _kind(f"<html><body>{parked}{GRID_ROW}</body></html>") is GateKind.CLEAR
    hidden = '<div class="geetest_panel" style="display:none"></div><iframe hidden src="/captcha"></iframe>'
    assert _kind(f"<html><body>{hidden}</body></html>") is GateKind.CLEAR


def test_reader_slider_needs_its_text() -> None:
    html = '<div class="read-btn-boxXml"><div class="slider-wrapper"></div>下一页</div>'
    assert _kind(html) is GateKind.CLEAR


def test_challenge_texts_only_count_without_result_rows() -> None:
    assert _kind("<body><p>请完成安全验证</p></body>") is GateKind.CHALLENGE
    assert _kind(f"<body><p>向右滑动完成验证</p>{GRID_ROW}</body>") is GateKind.CLEAR


def test_visible_password_field_on_login_path_is_login() -> None:
    html = '<form><input type="text" name="u"><input type="password" name="p"></form>'
    assert _kind(html, "https://my.cnki.net/login") is GateKind.LOGIN
    assert _kind(html) is GateKind.LOGIN  # no URL and nothing else on the page


def test_hidden_login_modal_on_ordinary_page_is_clear() -> None:
    modal = (
        '<div class="ecp_personalLoginBox" style="display: none;">'
        '<input type="password" class="ecp_passWord"></div>'
    )
    assert _kind(f"<body>{modal}<p>内容</p></body>", "https://kns.cnki.net/kns8s/") is GateKind.CLEAR
    visible_modal = modal.replace(' style="display: none;"', "")
    # an open modal on a result page is not a login page: the rows are there
    assert _kind(f"<body>{visible_modal}{GRID_ROW}</body>", "https://kns.cnki.net/kns8s/") is GateKind.CLEAR


@pytest.mark.parametrize("text", ["访问过于频繁，请稍后再试", "系统检测到异常访问"])
def test_a_too_frequent_access_text_is_rate_limited(text: str) -> None:
    assert _kind(f"<body><p>{text}</p></body>") is GateKind.RATE_LIMITED


@pytest.mark.parametrize("text", ["贵机构未订购该产品", "无权访问", "您没有阅读该文献的权限"])
def test_denied_texts_without_content(text: str) -> None:
    assert _kind(f"<body><p>{text}</p></body>") is GateKind.DENIED


def test_denied_text_next_to_content_is_clear() -> None:
    html = '<body><p>机构未订购</p><span id="ChDivSummary">摘要</span></body>'
    assert _kind(html) is GateKind.CLEAR


def test_temporarily_empty_grid_without_rows() -> None:
    html = "<body><div id='gridTable'><table class='result-table-list'></table><p>暂无数据</p></div></body>"
    assert _kind(html) is GateKind.TEMPORARILY_EMPTY
    assert _kind(f"<body>{GRID_ROW}<p>服务繁忙</p></body>") is GateKind.CLEAR


def test_raise_for_verdict_maps_kinds_to_error_codes() -> None:
    expected = {
        GateKind.CHALLENGE: "VERIFICATION_REQUIRED",
        GateKind.LOGIN: "LOGIN_REQUIRED",
        GateKind.DENIED: "ACCESS_DENIED",
        GateKind.TEMPORARILY_EMPTY: "SITE_TEMPORARILY_EMPTY",
        GateKind.RATE_LIMITED: "RATE_LIMITED",
        GateKind.NOT_FOUND: "LOCATOR_EXPIRED",
        GateKind.SERVER_ERROR: "SITE_UNAVAILABLE",
        GateKind.UNSUPPORTED: "PARSER_UNSUPPORTED",
    }
    for kind, code in expected.items():
        with pytest.raises(CnkiError) as info:
            raise_for_verdict(GateVerdict(kind=kind, evidence="x"))
        assert info.value.code == code
    raise_for_verdict(GateVerdict(kind=GateKind.CLEAR))


# --- real captures ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "kns8s-grid/kaffu_waam_p1.html",
        "kns8s-grid/pluginsx_shuziwenwu_p1.html",
        "kns8s-grid/pluginsx_search_result_4rows.html",
        "home-login/pluginsx_kns8s_personal_home_2026.html",
        "home-login/pluginsx_www_home_saved_2026.html",
        "kns-old-grid/roliygu_brief_scdb_2017.html",
    ],
)
def test_real_ordinary_pages_are_clear_despite_embedded_captcha_and_login_modal(name: str) -> None:
    assert _kind(read_real(name), "https://kns.cnki.net/kns8s/defaultresult/index", 200) is GateKind.CLEAR


def test_real_blockpuzzle_captcha_is_a_challenge() -> None:
    html = read_real("captcha/pluginsx_verify_blockpuzzle_rendered_2026.html")
    assert _kind(html) is GateKind.CHALLENGE
    # even without the title, its visible texts give it away (no result rows on it)
    assert _kind(html.replace("<title>安全验证</title>", "<title></title>")) is GateKind.CHALLENGE


def test_real_reader_paywall_is_denied() -> None:
    # bar.cnki.net htmlread entry: 【绑定账户】账户余额不足，请充值或开通会员后下载全文。
    verdict = classify_page(read_real("reader/pluginsx_bar_htmlread_paywall_2026.html"))
    assert verdict.kind is GateKind.DENIED
    assert verdict.evidence == "账户余额不足"


# --- header identity ----------------------------------------------------------------------


def test_identity_kns8s_home_is_not_logged_in() -> None:
    # 个人登录 and 机构登录 are shown; the masked personal name badge is display:none
    ident = read_header_identity(read_real("home-login/pluginsx_kns8s_personal_home_2026.html"))
    assert ident.ready is True
    assert ident.personal is IdentityKind.NOT_OBSERVED and ident.personal_name is None
    assert ident.institutions == []


@pytest.mark.parametrize(
    ("shown", "kept"),
    [("13812345678", "138****5678"), ("+8613812345678", "138****5678"), ("zhang.san@pku.edu.cn", "zh***@pku.edu.cn"), ("PLUGINS", "PLUGINS")],
)
def test_an_account_named_by_a_phone_number_or_email_is_masked(shown: str, kept: str) -> None:
    # the badge's title holds the account whole; it went to the client, its model provider and the records
    html = read_real("home-login/pluginsx_www_home_saved_2026.html").replace('title="PLUGINS"', f'title="{shown}"')
    assert read_header_identity(html).personal_name == kept


def test_identity_www_home_shows_personal_account() -> None:
    ident = read_header_identity(read_real("home-login/pluginsx_www_home_saved_2026.html"))
    assert ident.ready is True
    assert ident.personal is IdentityKind.AUTHENTICATED and ident.personal_name == "PLUGINS"
    assert ident.institutions == []


def test_identity_waam_grid_shows_institution_only() -> None:
    ident = read_header_identity(read_real("kns8s-grid/kaffu_waam_p1.html"))
    assert ident.institutions == ["山东建筑大学"]
    assert ident.personal is IdentityKind.NOT_OBSERVED and ident.ready is True


def test_identity_logout_link_marks_personal_login() -> None:
    html = "<body><div class='topLogin'><a href='/x'>退出登录</a></div></body>"
    ident = read_header_identity(html)
    assert (ident.ready, ident.personal) == (True, IdentityKind.AUTHENTICATED)
    hidden = "<body><div class='topLogin'>登录 <a style='display:none'>退出登录</a></div></body>"
    assert read_header_identity(hidden).personal is IdentityKind.NOT_OBSERVED


def test_identity_institution_selectors_and_not_ready_page() -> None:
    html = "<body><span id='Ecp_top_orgName'>北京大学</span><span class='org-name'>北京大学</span></body>"
    ident = read_header_identity(html)
    assert (ident.ready, ident.institutions) == (True, ["北京大学"])
    assert read_header_identity("<body><p>正文</p></body>").ready is False


# --- the WAF's 403 slider answer (docs/simulator.md "Challenges, blocks and sessions") -------------

VERIFY_URL = (
    "https://kns.cnki.net/verify/home?captchaType=blockPuzzle&ident=d3624d"
    "&captchaId=2a56ce77-4446-4f85-9767-a4b1f65cb851&returnUrl=eyDvWCt4s2-U0foBpgUc98_4QfdbPTouJb655n6Iw"
)
CHALLENGE_JSON = '{"code":-403,"message":"' + VERIFY_URL + '"}'


def test_403_json_naming_the_slider_is_a_challenge_not_a_denial() -> None:
    verdict = classify_page(CHALLENGE_JSON, "https://kns.cnki.net/kns8s/brief/grid", 403)
    assert verdict.kind is GateKind.CHALLENGE
    assert challenge_url(CHALLENGE_JSON) == VERIFY_URL


def test_403_json_rendered_in_a_tab_still_names_the_slider() -> None:
    rendered = (
        "<html><head></head><body><pre>"
        + CHALLENGE_JSON.replace("&", "&amp;")  # how Chromium serialises the text of a JSON answer
        + "</pre></body></html>"
    )
    assert challenge_url(rendered) == VERIFY_URL
    assert (
        classify_page(rendered, "https://kns.cnki.net/kcms2/article/abstract?v=x", 403).kind
        is GateKind.CHALLENGE
    )


def test_escaped_json_url_is_read_as_the_site_wrote_it() -> None:
    escaped = CHALLENGE_JSON.replace("&", "\\u0026")
    assert challenge_url(escaped) == VERIFY_URL


@pytest.mark.parametrize(
    "body",
    [
        '{"code":-403,"message":"无权访问"}',
        '{"code":-403,"message":"javascript:alert(1)//verify/"}',
        '{"code":1,"message":"' + VERIFY_URL + '"}',
        '{"code":-403,"message":' + "[1]" + "}",
        "<html><body><p>无权访问</p></body></html>",
    ],
)
def test_other_403_answers_name_no_slider(body: str) -> None:
    assert challenge_url(body) is None
    assert classify_page(body, None, 403).kind is GateKind.DENIED


def test_the_real_zero_paragraph_is_left_to_the_grid_parser_not_called_busy() -> None:
    """CNKI's zero answer reads 抱歉，暂无数据，请稍后重试。 inside `p.no-content`: the words of a
    busy site, but a zero result (azazo1/cnki-cli's fixtures cut from real responses)."""
    from cnki_mcp.parse.gate import classify_page
    from cnki_mcp.parse.grid import parse_grid

    zero = (
        '<div><div class="search-result"><span class="pagerTitleCell">共找到<em>0</em>条结果</span>'
        '<div id="briefBox"><p class="no-content" value="">抱歉，暂无数据，请稍后重试。</p></div></div></div>'
    )
    assert classify_page(zero, "https://kns.cnki.net/kns8s/brief/grid", 200).kind.value == "clear"
    assert parse_grid(zero, "https://kns.cnki.net/kns8s/brief/grid").zero_results is True
    busy = '<div><div class="search-result"><div class="no-content"><p>暂无数据，请稍后重试</p></div></div></div>'
    assert classify_page(busy, "https://kns.cnki.net/kns8s/brief/grid", 200).kind.value == "temporarily_empty"


@pytest.mark.parametrize(
    ("status", "code"),
    [(429, "RATE_LIMITED"), (404, "SITE_UNAVAILABLE"), (410, "SITE_UNAVAILABLE"), (502, "SITE_UNAVAILABLE"), (200, None), (403, None), (0, None)],
)
def test_an_error_page_where_a_reader_or_order_page_was_expected_is_its_site_error(status: int, code: str | None) -> None:
    from cnki_mcp.parse.gate import error_page

    error = error_page(status, "阅读页", "稍后再试")
    assert (error.code if error else None) == code
    assert error is None or (error.retryable and error.details["evidence"] == f"status {status}")


# --- the network path (docs/simulator.md "The network path") --------------------------------------


@pytest.mark.parametrize(
    ("html", "status"),
    [
        ("", 418),  # the CDN's refusal, no body
        (PLAIN, 418),  # with a body of its own
        ("", 200),  # an empty answer
        ("<html><head></head><body></body></html>", 200),  # the same as a browser renders it
        ("<!DOCTYPE html>\n<html><body>\n</body></html>", 200),
    ],
)
def test_the_cdns_refusal_is_site_unavailable_naming_it_not_an_unreadable_page(html: str, status: int) -> None:
    # a grid answered so was PARSER_UNSUPPORTED (页面结构无法识别, not retryable), the search page
    # QUERY_TEMPLATE_UNAVAILABLE after 20 s: nothing said a proxy was being refused
    verdict = classify_page(html, "https://kns.cnki.net/kns8s/brief/grid", status)
    assert verdict.kind is GateKind.CDN_REFUSED
    with pytest.raises(CnkiError) as info:
        raise_for_verdict(verdict)
    assert (info.value.code, info.value.details["reason"]) == ("SITE_UNAVAILABLE", "cdn_refused")


@pytest.mark.parametrize(
    ("html", "status"),
    [
        ("<html><head></head><body></body></html>", None),  # a tab still drawing: no answer status
        ("", 500),  # a failing server stays a server error
        ("", 403),
        ('<html><body><div id="root"></div></body></html>', 200),  # a page its script draws
    ],
)
def test_a_blank_page_that_is_not_a_whole_answer_is_not_the_cdns_refusal(html: str, status: int | None) -> None:
    assert _kind(html, "https://kns.cnki.net/kcms2/article/abstract", status) is not GateKind.CDN_REFUSED
