"""An operation record as tools show it (`server.models`): its `next_step` advice names only a call
that can succeed for that operation, and its budget reads as the tools' own input takes it."""

from __future__ import annotations

from cnki_mcp.errors import RELOCATE_FAILED
from cnki_mcp.server.models import (
    RELOCATE_FAILED_STEP,
    RETRY_LATER_STEP,
    TITLE_NOT_FOUND_STEP,
    BudgetView,
    default_next_step,
    incomplete_read_step,
)


def test_only_searches_and_citation_walks_with_a_checkpoint_are_told_to_continue() -> None:
    for kind in ("search", "citations"):  # citation_graph / find_citation_path keep a checkpoint
        assert "continue" in (default_next_step("partial", kind, checkpoint=True) or "")
        assert "continue" in (default_next_step("interrupted", kind, checkpoint=True) or "")
    # get_references / get_citing run as `citations` without one: continue would refuse them;
    # their pages are stored, so the same call again goes on where the budget stopped it
    step = default_next_step("partial", "citations", ("BUDGET_EXHAUSTED",)) or ""
    assert "continue" not in step and "get_citing" in step
    assert "continue" not in (default_next_step("interrupted", "search") or "")
    for kind in ("metadata", "export", "links", "verify", "read", "watch"):
        # a title get_metadata / export_citations could not locate: how to find the paper instead
        # (read_online_html given a title: the same advice, tested below)
        told = TITLE_NOT_FOUND_STEP if kind in ("metadata", "export", "read") else None
        assert default_next_step("partial", kind, ("DOCUMENT_NOT_FOUND",), checkpoint=True) == told
        assert "continue" not in (default_next_step("interrupted", kind, checkpoint=True) or "")


def test_a_downloaded_caj_is_not_sent_to_the_pdf_reader() -> None:
    assert default_next_step("completed", "download", saved_format="pdf") == "read_pdf_text(record_ref)"
    assert default_next_step("completed", "download", saved_format="caj") is None
    assert "retry=true" in (default_next_step("partial", "download", ("SIDE_EFFECT_UNCERTAIN",)) or "")
    # a file CNKI sent for a handled order that is not valid: charged or not is unknown
    assert "retry=true" in (default_next_step("failed", "download", ("INVALID_FILE",)) or "")
    # a format the page has no entry for (a CAJ-only yearbook asked as PDF): the formats it has
    lacking = default_next_step("failed", "download", ("DOWNLOAD_ENTRY_NOT_FOUND",)) or ""
    assert "details.available" in lacking and "download_paper" in lacking


def test_an_ambiguous_title_is_answered_with_the_call_by_a_candidates_record_ref() -> None:
    for status, kind in (("failed", "read"), ("failed", "download"), ("partial", "metadata")):
        step = default_next_step(status, kind, ("IDENTITY_AMBIGUOUS",)) or ""
        assert "details.candidates" in step and "record_ref" in step


def test_a_budget_shows_the_on_verification_value_a_client_passes() -> None:
    shown = BudgetView.model_validate({"max_requests": 1, "timeout_seconds": 1.0, "on_verification": "wait"})
    assert shown.on_verification == "ask"
    assert BudgetView(max_requests=1, timeout_seconds=1.0, on_verification="skip").on_verification == "skip"


def test_the_advice_names_the_operation_it_is_about() -> None:
    op = "op_" + "c" * 24
    assert default_next_step("running", "search", operation_id=op) == (
        f"operation_status(operation_id='{op}', wait_seconds=50)"
    )
    step = default_next_step("partial", "citations", checkpoint=True, operation_id=op) or ""
    assert step.startswith(f"operation_control(action='continue', operation_id='{op}')")


def test_a_page_skipped_at_a_login_wall_is_told_to_log_in_and_call_again() -> None:
    skipped = ("VERIFICATION_SKIPPED",)
    download = default_next_step("skipped", "download", skipped, login_skipped=True) or ""
    assert "login" in download and "download_paper" in download and "retry" not in download
    assert "read_online_html" in (default_next_step("skipped", "read", skipped, login_skipped=True) or "")
    # a skipped slider: the same call with on_verification='ask' once a person can solve it
    # (test_a_skipped_verification_is_told_to_call_again_with_ask)
    assert "login" not in (default_next_step("skipped", "download", skipped) or "")


def test_a_paper_without_an_html_reader_is_sent_to_the_download_and_the_pdf_text() -> None:
    step = default_next_step("failed", "read", ("HTML_ENTRY_NOT_FOUND",)) or ""
    assert "download_paper" in step and "read_pdf_text" in step
    assert default_next_step("failed", "read", ("HTML_ENTRY_NOT_FOUND",), reader_files=["pdf", "caj"]) == step


def test_a_reader_without_a_body_and_a_page_without_a_pdf_is_not_sent_to_read_pdf_text() -> None:
    # a book (reader only): its abstract-only reader said download_paper + read_pdf_text, and the
    # download's advice, with no file on the page, said read_online_html again
    unsupported = ("READER_UNSUPPORTED",)
    assert "read_pdf_text" in (default_next_step("failed", "read", unsupported) or "")
    assert "read_pdf_text" in (default_next_step("failed", "read", unsupported, reader_files=["pdf"]) or "")
    none = default_next_step("failed", "read", unsupported, reader_files=[]) or ""
    assert "read_pdf_text" not in none and "get_metadata" in none


def test_a_paper_without_an_html_reader_or_a_pdf_is_not_sent_to_read_pdf_text() -> None:
    # a CAJ-only yearbook was told to download and read_pdf_text, which cannot read a CAJ
    caj = default_next_step("failed", "read", ("HTML_ENTRY_NOT_FOUND",), reader_files=["caj"]) or ""
    assert "format='caj'" in caj and "get_metadata" in caj
    assert "read_pdf_text(record_ref)" not in caj
    none = default_next_step("failed", "read", ("HTML_ENTRY_NOT_FOUND",), reader_files=[]) or ""
    assert "download_paper" not in none and "read_pdf_text" not in none and "get_metadata" in none
    assert "doi.org" in none  # a foreign paper: CNKI links out, its DOI reaches the publisher


def test_a_read_that_returned_part_of_the_text_says_how_to_get_the_whole() -> None:
    trial = incomplete_read_step({"trial": True, "complete_article": False}) or ""
    assert "login" in trial and "download_paper" in trial and "read_pdf_text" in trial
    partial = incomplete_read_step({"trial": False, "complete_article": False}) or ""
    assert "download_paper" in partial and "read_pdf_text" in partial and "login" not in partial
    assert incomplete_read_step({"trial": False, "complete_article": None}) is None


def test_a_refused_read_or_download_is_told_to_check_the_identity_and_log_in() -> None:
    for kind, tool in (("read", "read_online_html"), ("download", "download_paper")):
        step = default_next_step("failed", kind, ("ACCESS_DENIED",)) or ""
        assert "session_status" in step and "login" in step and tool in step
    assert default_next_step("failed", "metadata", ("ACCESS_DENIED",)) is None


def test_a_cancelled_search_is_sent_to_the_results_it_kept_and_to_continue() -> None:
    step = default_next_step("cancelled", "search", checkpoint=True, operation_id="op_1") or ""
    assert "search_results(search_id='op_1')" in step and "continue" in step
    assert default_next_step("cancelled", "search") is None  # nothing kept: nothing to point at


def test_a_cancelled_citation_walk_download_or_list_read_is_told_how_to_go_on() -> None:
    """A cancelled citation_graph / find_citation_path kept its walk so far and its checkpoint,
    and continue takes it, but its next_step was null; so was a cancelled download's, whose click
    may have been charged, and a cancelled get_references', whose pages are stored."""
    walk = default_next_step("cancelled", "citations", checkpoint=True, operation_id="op_1") or ""
    assert "operation_control(action='continue', operation_id='op_1')" in walk
    lists = default_next_step("cancelled", "citations") or ""
    assert "continue" not in lists and "get_references" in lists
    download = default_next_step("cancelled", "download") or ""
    assert "download_paper" in download and "retry=true" in download


def test_a_skipped_verification_is_told_to_call_again_with_ask() -> None:
    """An operation a slider or captcha ended `skipped` under on_verification='skip' got no
    next_step (a skipped login is told to log in): the same call with skip meets the same page."""
    for kind, tool in (("read", "read_online_html"), ("verify", "verify_references"), ("download", "download_paper")):
        step = default_next_step("skipped", kind, ("VERIFICATION_SKIPPED",)) or ""
        assert "on_verification" in step and "'ask'" in step and tool in step
    # get_metadata takes no on_verification: nothing to change in the call
    assert default_next_step("skipped", "metadata", ("VERIFICATION_SKIPPED",)) is None
    login = default_next_step("skipped", "read", ("VERIFICATION_SKIPPED",), login_skipped=True) or ""
    assert "login" in login and "on_verification" not in login


def test_a_call_its_own_budget_stopped_is_not_told_cnki_gave_nothing() -> None:
    """A verify_references (or read, link, download) stopped by BUDGET_EXHAUSTED was told
    知网这次没有给出结果（限流、暂时不可用或验证未完成）: the budget, not CNKI, had stopped it, and
    its result holds the entries judged so far. It is told its budget ran out and to call again."""
    for kind, tool in (("verify", "verify_references"), ("links", "link_references"), ("read", "read_online_html")):
        step = default_next_step("partial", kind, ("BUDGET_EXHAUSTED",), retryable=True) or ""
        assert tool in step and "预算" in step and step != RETRY_LATER_STEP.format(tool=tool)
    # a site error still reads as the site's
    site = default_next_step("partial", "verify", ("RATE_LIMITED",), retryable=True)
    assert site == RETRY_LATER_STEP.format(tool="verify_references")


def test_a_reader_without_a_body_is_sent_to_the_file() -> None:
    step = default_next_step("failed", "read", ("READER_UNSUPPORTED",)) or ""
    assert "download_paper" in step and "read_pdf_text" in step


def test_an_operation_stopped_by_the_browser_is_told_to_fix_it_before_going_on() -> None:
    """A search stopped by BROWSER_UNAVAILABLE (a browser that does not start, a profile locked by
    another computer) was told only to continue, which fails the same way; a get_metadata got no
    advice at all. Both are sent to doctor first, then to the call that goes on."""
    search = default_next_step("partial", "search", ("BROWSER_UNAVAILABLE",), checkpoint=True, operation_id="op_1")
    assert search is not None and "cnki-mcp doctor" in search and "operation_control(action='continue'" in search
    metadata = default_next_step("partial", "metadata", ("BROWSER_PROFILE_IN_USE",), operation_id="op_2")
    assert metadata is not None and "cnki-mcp doctor" in metadata and "continue" not in metadata


def test_the_interrupted_message_names_every_tool_continue_carries_on() -> None:
    """An interrupted citation_graph was told that only searches continue (其他操作请重新发起)
    while its next_step said continue: the message names the citation walks too."""
    from cnki_mcp.operations import INTERRUPTED_MESSAGE

    for tool in ("search", "structured_search", "citation_graph", "find_citation_path"):
        assert tool in INTERRUPTED_MESSAGE


def test_a_download_page_without_any_file_is_not_sent_to_a_format_it_lacks() -> None:
    """DOWNLOAD_ENTRY_NOT_FOUND names the formats the page has (`details.available`); with none the
    advice to download one of them pointed at an empty list."""
    from datetime import UTC, datetime

    from cnki_mcp.errors import DownloadEntryNotFound
    from cnki_mcp.jobs import OperationKind
    from cnki_mcp.operations import BudgetSpec, OperationErrorInfo, OperationRecord, OperationStatus
    from cnki_mcp.server.models import OperationView

    def view(available: list[str]) -> str:
        when = datetime(2026, 12, 6, tzinfo=UTC)
        record = OperationRecord(
            operation_id="op_" + "d" * 24, kind=OperationKind.DOWNLOAD, status=OperationStatus.FAILED,
            budget=BudgetSpec(max_requests=10, timeout_seconds=60), created_at=when, updated_at=when,
            errors=[OperationErrorInfo.of(DownloadEntryNotFound(format="pdf", available=available))],
        )  # fmt: skip
        return OperationView.of(record).next_step or ""

    assert "format=" in view(["caj"]) and "read_online_html" in view(["caj"])
    nothing = view([])
    assert "read_online_html" in nothing and "details.available" not in nothing and "format=" not in nothing


def test_a_check_of_several_watches_names_every_watch_with_unlisted_records() -> None:
    from cnki_mcp.server.models import unlisted_step

    checks = [
        {"watch_id": "w_a", "next_offset": 20},
        {"watch_id": "w_b", "next_offset": None},
        {"watch_id": "w_c", "next_offset": 20},
    ]
    step = unlisted_step({"checks": checks}) or ""
    assert "list_watches(watch_id='w_a', offset=20)" in step and "list_watches(watch_id='w_c', offset=20)" in step
    assert "w_b" not in step
    assert unlisted_step({"checks": [{"watch_id": "w_b", "next_offset": None}]}) is None


def test_a_title_download_paper_or_read_online_html_could_not_locate_is_told_how_to_find_it() -> None:
    # it was null for these two, while get_metadata / export_citations got the advice
    for kind in ("download", "read"):
        assert default_next_step("failed", kind, ("DOCUMENT_NOT_FOUND",)) == TITLE_NOT_FOUND_STEP


def test_an_operation_stopped_by_a_retryable_site_error_is_told_to_call_again_later() -> None:
    # get_references / read_online_html / download_paper stopped by SITE_UNAVAILABLE or
    # RATE_LIMITED said nothing (next_step null), while the README promises 重新调用
    for kind, tool in (
        ("citations", "get_references"), ("read", "read_online_html"), ("download", "download_paper"),
        ("verify", "verify_references"), ("links", "link_references"),
    ):  # fmt: skip
        for status in ("partial", "failed"):
            step = default_next_step(status, kind, ("SITE_UNAVAILABLE",), retryable=True) or ""
            assert tool in step and "相同参数" in step and "continue" not in step, (kind, step)
    # not retryable: no such advice
    assert default_next_step("failed", "citations", ("ACCESS_DENIED",), retryable=False) is None
    # a search or graph with a checkpoint still continues; a metadata page keeps its own advice
    assert "continue" in (default_next_step("partial", "search", ("RATE_LIMITED",), checkpoint=True, retryable=True) or "")
    assert default_next_step("partial", "metadata", ("SITE_UNAVAILABLE",), retryable=True) is None


def test_a_refused_download_is_told_to_check_the_account_like_a_refused_read() -> None:
    # DOWNLOAD_REFUSED (余额不足, 无权访问 on the order page) had no advice; ACCESS_DENIED had
    step = default_next_step("failed", "download", ("DOWNLOAD_REFUSED",)) or ""
    assert "session_status" in step and "login" in step and "download_paper" in step


def test_a_paper_given_by_record_ref_that_cnki_lost_is_not_told_to_spell_its_title() -> None:
    # review 7b #11: the record's locator expired and relocation by its stored title found nothing
    # (site/reading.py relocate); the caller gave no title, so "题名须与知网完全一致" was no help
    from datetime import UTC, datetime

    from cnki_mcp.errors import DocumentNotFound
    from cnki_mcp.jobs import OperationKind
    from cnki_mcp.operations import BudgetSpec, OperationErrorInfo, OperationRecord, OperationStatus
    from cnki_mcp.server.models import OperationView

    def view(kind: OperationKind, error: DocumentNotFound) -> str | None:
        when = datetime(2026, 12, 6, tzinfo=UTC)
        record = OperationRecord(
            operation_id="op_" + "e" * 24, kind=kind, status=OperationStatus.FAILED,
            budget=BudgetSpec(max_requests=10, timeout_seconds=60), created_at=when, updated_at=when,
            errors=[OperationErrorInfo.of(error)],
        )  # fmt: skip
        return OperationView.of(record).next_step

    for kind in (OperationKind.READ, OperationKind.DOWNLOAD):
        relocated = DocumentNotFound(
            record_ref="p_" + "1" * 16, title="约定违约金调整规则的法律规制研究", reason=RELOCATE_FAILED
        )
        assert view(kind, relocated) == RELOCATE_FAILED_STEP != TITLE_NOT_FOUND_STEP
        # a record_ref this data directory never had was not relocated: its message says to search
        assert view(kind, DocumentNotFound.unknown_ref("p_" + "2" * 16)) != RELOCATE_FAILED_STEP
        located = DocumentNotFound("知网上没有这个完整题名", title="约定违约金调整规则的法律规制研究")  # a title asked
        assert view(kind, located) == TITLE_NOT_FOUND_STEP


def test_a_login_that_ended_without_any_identity_says_so_and_what_to_do() -> None:
    # login -> awaiting_user -> operation_control resume before anybody logged in ended
    # `completed` / 已完成 with personal and institution not_observed and next_step null
    from datetime import UTC, datetime

    from cnki_mcp.jobs import OperationKind
    from cnki_mcp.operations import BudgetSpec, OperationRecord, OperationStatus
    from cnki_mcp.server.models import NO_IDENTITY_STEP, OperationView

    def view(personal: str, institution: str) -> str | None:
        when = datetime(2026, 12, 6, tzinfo=UTC)
        result = {"personal": personal, "institution": institution, "institution_evidence": [],
                  "permission_scope": "unknown", "evidence_source": "kns_header"}  # fmt: skip
        record = OperationRecord(
            operation_id="op_" + "f" * 24, kind=OperationKind.LOGIN, status=OperationStatus.COMPLETED,
            budget=BudgetSpec(max_requests=20, timeout_seconds=60), created_at=when, updated_at=when,
            result=result,
        )  # fmt: skip
        return OperationView.of(record).next_step

    step = view("not_observed", "not_observed")
    assert step == NO_IDENTITY_STEP and "login" in step and "session_status(refresh=true)" in step
    assert view("authenticated", "not_observed") is None
    assert view("not_observed", "observed") is None


def test_the_continue_advice_after_a_spent_budget_says_how_many_requests_it_adds() -> None:
    # citation_graph(max_requests=6) spent its budget; the advice's continue, made as written (no
    # additional_requests), raised the budget to 206 and said nothing of it
    from cnki_mcp.jobs import CONTINUE_DEFAULT_REQUESTS

    step = default_next_step("partial", "citations", ("BUDGET_EXHAUSTED",), checkpoint=True) or ""
    assert step.startswith("operation_control(action='continue'")
    assert str(CONTINUE_DEFAULT_REQUESTS) in step and "additional_requests" in step
    # not spent (a restart interrupted it): the continue adds nothing, so nothing is said
    quiet = default_next_step("interrupted", "search", checkpoint=True) or ""
    assert "continue" in quiet and str(CONTINUE_DEFAULT_REQUESTS) not in quiet


def test_the_advice_after_a_read_or_download_names_the_papers_own_record_ref() -> None:
    # it said read_pdf_text(record_ref) / download_paper(record_ref): a placeholder the client had
    # to fill in, and a read by title never showed which record_ref was meant
    from datetime import UTC, datetime

    from cnki_mcp.errors import HtmlEntryNotFound
    from cnki_mcp.jobs import OperationKind
    from cnki_mcp.operations import BudgetSpec, OperationErrorInfo, OperationRecord, OperationStatus
    from cnki_mcp.server.models import OperationView

    ref = "rec_" + "a" * 24
    when = datetime(2026, 12, 6, tzinfo=UTC)
    budget = BudgetSpec(max_requests=10, timeout_seconds=60)
    downloaded = OperationRecord(
        operation_id="op_" + "f" * 24, kind=OperationKind.DOWNLOAD, status=OperationStatus.COMPLETED, budget=budget,
        created_at=when, updated_at=when, result={"record_ref": ref, "format": "pdf", "path": "/x.pdf"},
    )  # fmt: skip
    assert OperationView.of(downloaded).next_step == f"read_pdf_text(record_ref='{ref}')"
    unreadable = OperationRecord(
        operation_id="op_" + "f" * 24, kind=OperationKind.READ, status=OperationStatus.FAILED, budget=budget,
        created_at=when, updated_at=when,
        errors=[OperationErrorInfo.of(HtmlEntryNotFound(record_ref=ref, available=["pdf", "caj"]))],
    )  # fmt: skip
    step = OperationView.of(unreadable).next_step or ""
    assert f"download_paper(record_ref='{ref}')" in step and f"read_pdf_text(record_ref='{ref}')" in step
    assert "(record_ref)" not in step
