"""The web UI of `memtree serve --http`, in a real browser: Playwright
driving Debian's chromium (`bash scripts/test.sh --ui` installs both).

Each test opens the pages a person would, acts as they would, and checks
the page and the files on disk. A screenshot of each page is kept in
`$MEMTREE_UI_SCREENSHOTS` (default `target/ui-screenshots`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import BIN, REPO_ROOT, docs, http_server

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = pytest.mark.ui

SHOTS = Path(os.environ.get("MEMTREE_UI_SCREENSHOTS") or REPO_ROOT / "target" / "ui-screenshots")
TOKEN = "ui-s3cret"

ROOT = "# Root\n\nWhat the team remembers.\n\n- [[projects]]\n- [[people]]\n"
PROJECTS = (
    "---\nsummary: The projects we run\ntags: [work]\n---\n# Projects\n\nEvery project, one child each.\n\n"
    "- [[projects/silica]]\n- [[projects/quartz]]\n"
)
SILICA = (
    "# Silica\n\nThe ingestion pipeline.\n\n## Database\n\nPostgres runs on port 5433 in staging.\n\n"
    "## Team\n\nAda leads; Bob is on call.\n"
)
QUARTZ = "# Quartz\n\nThe search front end, written in TypeScript.\n"
PEOPLE = "# People\n\nAda and Bob.\n\nThey run [Silica](projects/silica.md).\n"
HOSTILE = (
    "# Hostile\n\nAn agent wrote markup into memory.\n\n<script>alert('script')</script>\n\n"
    "<img src=\"x\" onerror=\"alert('onerror')\">\n\n[click me](javascript:alert('link'))\n\n"
    "<a href=\"javascript:alert('anchor')\">or me</a> <svg><script>alert('svg')</script></svg>\n"
)


def write(store: Path, env: dict[str, str], id: str, text: str) -> None:
    r = subprocess.run([str(BIN), "--data-dir", str(store), "write", id], input=text, env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def seed(store: Path, env: dict[str, str]) -> None:
    for id, text in [("root", ROOT), ("projects", PROJECTS), ("projects/silica", SILICA),
                     ("projects/quartz", QUARTZ), ("people", PEOPLE)]:
        write(store, env, id, text)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    chromium = os.environ.get("MEMTREE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("no chromium: bash scripts/test.sh --ui installs it")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def ui(store: Path, base_env: dict[str, str]) -> Iterator[str]:
    """A served, seeded store: its base URL."""
    seed(store, base_env)
    with http_server(store, base_env) as addr:
        yield f"http://{addr}"


@pytest.fixture
def page(browser, request) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1200, "height": 860})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert not errors, f"script errors on the page: {errors}"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_the_tree_lists_every_document_with_its_summary(ui: str, page) -> None:
    page.goto(ui + "/")
    tree = page.locator("ul.tree")
    for id in ["root", "projects", "projects/silica", "projects/quartz", "people"]:
        assert tree.get_by_role("link", name=id, exact=True).count() == 1, id
    assert "The projects we run" in tree.inner_text(), "front-matter summary"
    assert "The ingestion pipeline" in tree.inner_text(), "first sentence"
    shot(page, "tree")
    # Collapsing a subtree hides its children.
    page.locator("details:has(> summary > a:text-is('projects')) > summary").click(position={"x": 2, "y": 8})
    assert not page.get_by_role("link", name="projects/silica", exact=True).is_visible()
    page.get_by_role("link", name="projects", exact=True).click()
    page.wait_for_url("**/doc/projects")
    assert page.locator("h1").first.inner_text() == "projects"


def test_a_document_is_rendered_with_its_place_and_fields(ui: str, page) -> None:
    page.goto(ui + "/doc/projects")
    assert page.locator(".crumbs").inner_text().startswith("root")
    fields = page.locator("dl.fields").inner_text()
    assert "summary" in fields and "The projects we run" in fields
    assert page.locator("article h1").inner_text() == "Projects"
    page.locator("article").get_by_role("link", name="projects/silica").click()
    page.wait_for_url("**/doc/projects/silica")
    assert page.locator("article h2").first.inner_text() == "Database"
    assert page.locator(".crumbs").inner_text().replace("\n", " ") == "root › projects › projects/silica"
    shot(page, "document")


def test_outline_and_status(ui: str, page) -> None:
    page.goto(ui + "/outline")
    assert "projects/silica" in page.locator("pre.outline").inner_text()
    shot(page, "outline")
    page.goto(ui + "/status")
    status = page.locator("pre.status").inner_text()
    assert "documents: 5" in status and "suggestions:" in status
    shot(page, "status")


def test_an_edit_is_saved_on_the_version_read(ui: str, page, store: Path) -> None:
    page.goto(ui + "/doc/people")
    page.get_by_role("link", name="Edit").click()
    page.wait_for_url("**/edit/people")
    page.locator("textarea").fill("# People\n\nAda, Bob and Cy.\n\n- [[people/cy]]\n")
    shot(page, "edit")
    page.get_by_role("button", name="Save").click()
    assert page.locator(".notice").inner_text() == "Succeeded\nCreated: people/cy"
    assert "Ada, Bob and Cy." in page.locator("article").inner_text()
    on_disk = docs(store)
    assert on_disk["people"] == "# People\n\nAda, Bob and Cy.\n\n- [[people/cy]]\n", "LF kept, not the form's CRLF"
    assert "people/cy" in on_disk


def test_a_concurrent_change_is_merged_or_shown_as_a_conflict(ui: str, page, store: Path,
                                                              base_env: dict[str, str]) -> None:
    # Another writer changes a different section: the save merges.
    page.goto(ui + "/edit/projects/silica")
    write(store, base_env, "projects/silica", SILICA.replace("Ada leads", "Eve leads"))
    page.locator("textarea").fill(SILICA.replace("5433", "5434"))
    page.get_by_role("button", name="Save").click()
    assert page.locator(".notice").inner_text().startswith("Succeeded\nMerged:")
    assert docs(store)["projects/silica"] == SILICA.replace("5433", "5434").replace("Ada leads", "Eve leads")
    # Another writer changes the same section: the save is refused, shown,
    # and neither text is lost.
    page.goto(ui + "/edit/projects/silica")
    theirs = docs(store)["projects/silica"].replace("port 5434", "port 6000")
    write(store, base_env, "projects/silica", theirs)
    page.locator("textarea").fill(theirs.replace("port 6000", "port 7000"))
    page.get_by_role("button", name="Save").click()
    notice = page.locator(".notice").inner_text()
    assert notice.startswith("Error: version:") and "Database" in notice, notice
    assert "port 7000" in page.locator("textarea").input_value(), "what the person typed is kept"
    assert "port 6000" in page.locator("details.current pre").inner_text(), "the other writer's text is shown"
    assert docs(store)["projects/silica"] == theirs, "the other writer's change is not lost"
    shot(page, "conflict")
    # Saving again is based on the version now shown: the person merged.
    page.get_by_role("button", name="Save").click()
    assert page.locator(".notice").inner_text() == "Succeeded"
    assert "port 7000" in docs(store)["projects/silica"]


def test_lifecycle_changes_say_why(ui: str, page, store: Path) -> None:
    page.goto(ui + "/doc/projects/quartz")
    page.locator("details.lifecycle > summary").click()
    page.locator("select[name=status]").select_option("deprecated")
    page.locator("input[name=why]").fill("the front end was rewritten")
    page.get_by_role("button", name="Change").click()
    assert page.locator(".notice").inner_text().startswith("Succeeded")
    assert "deprecated" in page.locator("dl.fields").inner_text()
    assert "status: deprecated" in docs(store)["projects/quartz"]


def test_search_and_memory_pack(ui: str, page) -> None:
    page.goto(ui + "/")
    page.locator("nav input[name=q]").fill("postgres staging port")
    page.locator("nav input[name=q]").press("Enter")
    page.wait_for_url("**/search?q=*")
    first = page.locator("ol.hits > li").first
    assert first.locator("a.cite").inner_text() == "[projects/silica#Database]"
    assert "5433" in first.locator(".excerpt").inner_text()
    shot(page, "search")
    page.locator("form.pack input[name=task]").fill("which port does the staging database use")
    page.get_by_role("button", name="Preview pack").click()
    page.wait_for_url("**/pack?*")
    assert "[projects/silica#Database]" in page.locator("pre.pack").inner_text()
    shot(page, "pack")


def test_the_graph_draws_every_document(ui: str, page) -> None:
    page.goto(ui + "/graph")
    assert page.locator("svg.graph circle").count() == 5
    assert page.locator("svg.graph line").count() == 4
    # The reference from people to projects/silica, drawn apart from the tree.
    assert page.locator("svg.graph g.references path").count() == 1
    shot(page, "graph")
    page.locator("svg.graph a", has=page.locator("title", has_text="people")).first.click()
    page.wait_for_url("**/doc/people")
    # A reference on a page leads to the document it names.
    page.locator("article").get_by_role("link", name="Silica").click()
    page.wait_for_url("**/doc/projects/silica")


def test_history_diffs_and_restores(ui: str, page, store: Path, base_env: dict[str, str]) -> None:
    write(store, base_env, "people", PEOPLE.replace("Ada and Bob.", "Ada, Bob and Dan."))
    page.goto(ui + "/history/people")
    rows = page.locator("table.versions tr")
    assert rows.count() >= 2
    page.get_by_role("button", name="Compare the two chosen").click()
    page.wait_for_url("**/diff/people?*")
    assert page.locator("pre.diff .del").inner_text().strip() == "-Ada and Bob."
    assert page.locator("pre.diff .ins").inner_text().strip() == "+Ada, Bob and Dan."
    shot(page, "diff")
    page.goto(ui + "/history/people")
    shot(page, "history")
    page.locator("button.restore").first.click()
    assert page.locator(".notice").inner_text().startswith("Succeeded")
    assert docs(store)["people"] == PEOPLE


def test_a_pruned_subtree_is_restored(ui: str, page, store: Path, base_env: dict[str, str]) -> None:
    write(store, base_env, "projects", PROJECTS.replace("- [[projects/silica]]\n", ""))
    assert "projects/silica" not in docs(store)
    page.goto(ui + "/history")
    shot(page, "store-history")
    page.locator("form.restore input[name=id]").fill("projects/silica")
    page.get_by_role("button", name="Its versions").click()
    page.wait_for_url("**/history/projects/silica")
    assert "[deleted]" in page.locator("table.versions").inner_text()
    page.locator("button.restore").first.click()
    notice = page.locator(".notice").inner_text()
    assert notice.startswith("Succeeded"), notice
    assert docs(store)["projects/silica"] == SILICA
    assert "[[projects/silica]]" in docs(store)["projects"]


def test_markup_an_agent_wrote_never_runs(ui: str, page, store: Path, base_env: dict[str, str]) -> None:
    write(store, base_env, "people", PEOPLE + "\n- [[people/hostile]]\n")
    write(store, base_env, "people/hostile", HOSTILE)
    # Whatever ran would say so, through a reload too.
    ran: list[str] = []
    page.on("dialog", lambda d: (ran.append(d.message), d.dismiss()))
    page.goto(ui + "/doc/people/hostile")
    assert "An agent wrote markup" in page.locator("article").inner_text()
    page.get_by_text("click me").click()
    page.get_by_text("or me").click()
    page.wait_for_timeout(500)
    assert ran == []
    assert page.locator("article script, article [onerror]").count() == 0
    shot(page, "sanitized")


def test_an_open_page_follows_what_agents_write(ui: str, page, store: Path, base_env: dict[str, str]) -> None:
    page.goto(ui + "/doc/people")
    write(store, base_env, "people", "# People\n\nAda, Bob and Fay.\n")
    page.locator("article", has_text="Fay").wait_for(timeout=10_000)
    # A page of the whole store says the memory changed, and reloads when asked.
    page.goto(ui + "/")
    write(store, base_env, "people", "# People\n\nAda, Bob and Fay.\n\n- [[people/hal]]\n")
    page.locator("#changed").wait_for(state="visible", timeout=10_000)
    page.locator("#changed").get_by_role("link", name="Reload").click()
    page.locator("ul.tree").get_by_role("link", name="people/hal", exact=True).wait_for(timeout=10_000)
    # A form being filled in is not reloaded: it says the document changed.
    page.goto(ui + "/edit/people")
    page.locator("textarea").fill("# People\n\nTyped, not saved.\n")
    write(store, base_env, "people", "# People\n\nAda, Bob and Gus.\n")
    page.locator("#changed").wait_for(state="visible", timeout=10_000)
    assert page.locator("textarea").input_value() == "# People\n\nTyped, not saved.\n"


def test_a_token_is_asked_for_once_and_kept_in_a_strict_cookie(store: Path, base_env: dict[str, str],
                                                               browser) -> None:
    seed(store, base_env)
    with http_server(store, base_env, "--token", TOKEN) as addr:
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"http://{addr}/doc/people")
        assert page.locator("h1").inner_text() == "Token"
        shot(page, "login")
        page.locator("input[name=token]").fill("wrong")
        page.get_by_role("button", name="Open").click()
        assert page.locator("p.error").inner_text() == "Wrong token."
        page.locator("input[name=token]").fill(TOKEN)
        page.get_by_role("button", name="Open").click()
        page.wait_for_url("**/doc/people")
        assert page.locator("article h1").inner_text() == "People"
        (cookie,) = context.cookies()
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == ("memtree_token", True, "Strict")
        page.goto(f"http://{addr}/edit/people")
        page.locator("textarea").fill("# People\n\nSaved through the cookie.\n")
        page.get_by_role("button", name="Save").click()
        assert page.locator(".notice").inner_text() == "Succeeded"
        context.close()


def test_a_large_tree_opens_its_deep_subtrees_on_demand(store: Path, base_env: dict[str, str], browser) -> None:
    # 40 sections of 10 notes each, written as files (as an editor would).
    store.mkdir()
    (store / "root.md").write_text("# Root\n\n" + "".join(f"- [[s{i}]]\n" for i in range(40)))
    for i in range(40):
        (store / f"s{i}.md").write_text(f"# Section {i}\n\n" + "".join(f"- [[s{i}n{j}]]\n" for j in range(10)))
        for j in range(10):
            (store / f"s{i}n{j}.md").write_text(f"# Note {i}.{j}\n\nThe fact number {i * 10 + j}.\n")
    with http_server(store, base_env) as addr:
        page = browser.new_page()
        page.goto(f"http://{addr}/")
        folded = page.locator("details[data-src]")
        assert folded.count() > 0, "past the first documents, subtrees are left folded"
        last = page.locator("ul.tree > li > details > ul > li").last
        assert last.locator("a").first.inner_text() == "s39"
        assert last.locator("a", has_text="s39n9").count() == 0, "not listed until opened"
        last.locator("summary").first.click(position={"x": 2, "y": 8})
        last.get_by_role("link", name="s39n9", exact=True).wait_for(timeout=10_000)
        page.close()
