"""The web console in a real headless browser (Debian ``chromium`` driven by
``chromium-driver`` through Selenium) against a real ``longdoc serve``.

Each test saves a screenshot of every step under its own output folder
(``<pytest tmp>/…/shots``; with ``LONGDOC_SCREENSHOTS=DIR`` also into DIR,
which is how the screenshot in docs/console.md is made). The tests are skipped, with
the reason, only where the browser cannot run: ``scripts/system-deps.sh``
installs both packages for ``make test``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

from tests.service.helpers import accepted, submit, wait_terminal

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT_S = 30.0
JOB_WAIT_S = 240.0

selenium = pytest.importorskip("selenium", reason="selenium is not installed (the test extra installs it)")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    pytest.skip("Debian packages chromium and chromium-driver are not installed "
                "(scripts/system-deps.sh installs them when run as root)", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


class Console:
    """One headless Chromium looking at the console of ``base_url``."""

    def __init__(self, driver, downloads: Path, shots: Path, name: str) -> None:
        self.driver, self.downloads, self.shots, self.name = driver, downloads, shots, name
        self.base_url = ""
        self.step = 0

    def open(self, base_url: str, hash_: str = "") -> None:
        self.base_url = base_url
        self.driver.get(f"{base_url}/console/{hash_}")

    def go(self, hash_: str) -> None:
        self.driver.get(f"{self.base_url}/console/{hash_}")

    def sign_in(self, base_url: str, key: str) -> None:
        self.open(base_url, "#/signin")
        self.driver.execute_script("sessionStorage.clear()")
        self.open(base_url, "#/signin")
        field = self.wait_for("#api-key")
        field.send_keys(key)
        self.find("#signin-submit").click()

    def find(self, css: str):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def all(self, css: str) -> list:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def attrs(self, css: str, name: str) -> list:
        """One attribute of every match, read in one script: a list the console
        re-renders between two reads cannot go stale under the test."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map((e) => e.getAttribute(arguments[1]))", css, name)

    def wait_for(self, css: str, timeout: float = WAIT_S):
        return self.until(lambda d: (d.find_elements(By.CSS_SELECTOR, css) or [None])[0], timeout, f"no {css}")

    def until(self, condition, timeout: float = WAIT_S, what: str = "condition"):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(condition)
        except TimeoutException:
            self.shot("timeout")
            raise AssertionError(f"{what} after {timeout} s at {self.driver.current_url}; "
                                 f"page text: {self.find('body').text[:1500]!r}") from None

    def shot(self, name: str) -> Path:
        self.step += 1
        path = self.shots / f"{self.step:02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        extra = os.environ.get("LONGDOC_SCREENSHOTS")
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(extra) / f"{self.name}-{path.name}")
        return path

    def downloaded(self, name: str, timeout: float = WAIT_S) -> bytes:
        path = self.downloads / name
        self.until(lambda d: path.exists() and not (self.downloads / f"{name}.crdownload").exists(), timeout,
                   f"no download {name}")
        return path.read_bytes()

    def browser_errors(self) -> list[str]:
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"
                and "Failed to load resource" not in e["message"]]  # failed API answers are shown, not errors


@pytest.fixture
def console(request, tmp_path):
    downloads, shots = tmp_path / "downloads", tmp_path / "shots"
    downloads.mkdir()
    shots.mkdir()
    os.environ.setdefault("SE_OFFLINE", "true")   # Selenium Manager must not look for drivers online
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
                "--disable-extensions", "--disable-sync", "--no-first-run", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT_S)
    c = Console(driver, downloads, shots, request.node.name.removeprefix("test_"))
    yield c
    print(f"console screenshots: {shots}")
    driver.quit()


def test_sign_in_upload_watch_view_page_and_download(server, console, sample_pdf):
    key = server.create_key("console-main")
    console.sign_in(server.url, key.key)
    console.wait_for("#upload-files")
    console.shot("signed-in")

    console.find("#opt-format-pdf").click()        # the searchable PDF too
    console.find("#upload-files").send_keys(str(sample_pdf))
    link = console.wait_for("#uploads li.ok a.accepted")
    job_id = link.get_attribute("href").rsplit("/", 1)[1]
    console.shot("uploaded")
    console.wait_for(f'#jobs-body tr[data-job="{job_id}"]')   # the list shows the new job
    link.click()

    console.wait_for("#job-progress")
    console.shot("job-page")
    console.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#job-state [data-state="succeeded"]'),
                  JOB_WAIT_S, "the job did not succeed")
    console.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#page-strip .cell.ok")) == 5,
                  what="five done page cells")
    assert console.attrs("#page-strip .cell", "data-page") == ["1", "2", "3", "4", "5"]
    assert console.find("#fig-pages").text == "5 / 5 pages"
    assert console.find("#fig-rate").text.endswith("pages/s") and console.find("#fig-rate").text[0].isdigit()
    assert int(console.find("#job-progress").get_attribute("value")) == 5
    console.shot("job-finished")

    http = server.http(key)
    console.find("#download-md").click()
    assert console.downloaded("sample.md") == http.get(f"/v1/jobs/{job_id}/result", params={"format": "md"}).content
    assert console.find("#download-pdf").text == "Download Searchable PDF"
    console.find("#download-pdf").click()
    pdf = console.downloaded("sample.pdf")
    assert pdf[:5] == b"%PDF-" and pdf == http.get(f"/v1/jobs/{job_id}/result", params={"format": "pdf"}).content

    console.find('#page-strip .cell[data-page="4"]').click()
    page = http.get(f"/v1/jobs/{job_id}/pages/4").json()
    assert page["blocks"], "page 4 of the sample has text"
    console.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#boxes .box .order")) == len(page["blocks"]),
                  what="every block boxed and numbered")
    console.until(lambda d: d.execute_script("const i = document.getElementById('page-image');"
                                             "return i.complete && i.naturalWidth > 0;"), what="the page image")
    ordered = sorted(page["blocks"], key=lambda b: b["order"])
    boxes = console.all("#boxes .box:not(.more)")   # a block's first box (one more per column it runs on to)
    assert [b.get_attribute("data-block") for b in boxes] == [b["id"] for b in ordered]
    assert [b.get_attribute("data-kind") for b in boxes] == [b["kind"] for b in ordered]
    assert [b.text for b in boxes] == [str(i + 1) for i in range(len(ordered))]          # reading order numbers
    assert [li.get_attribute("data-kind") for li in console.all("#blocks li")] == [b["kind"] for b in ordered]
    width, height = console.driver.execute_script(
        "const i = document.getElementById('page-image'); return [i.naturalWidth, i.naturalHeight];")
    assert abs(height / width - page["height"] / page["width"]) < 0.02   # the image is the page the boxes are on
    first = ordered[0]["bbox"]   # the heading: one line, one box
    img = console.find("#page-image").rect
    box = boxes[0].rect
    assert abs(box["x"] - img["x"] - first["x0"] / page["width"] * img["width"]) < 4   # drawn where the block is
    assert abs(box["y"] - img["y"] - first["y0"] / page["height"] * img["height"]) < 4
    markdown = http.get(f"/v1/jobs/{job_id}/pages/4", params={"format": "md"}).text
    console.until(lambda d: d.find_element(By.ID, "page-markdown").get_attribute("textContent") == markdown,
                  what="the page's Markdown")
    console.shot("page-4")

    body = console.find("body")
    body.send_keys(Keys.ARROW_RIGHT)
    console.until(lambda d: d.find_element(By.ID, "page-number").text == "Page 5", what="page 5 after →")
    body = console.find("body")
    body.send_keys(Keys.ARROW_LEFT)
    console.until(lambda d: d.find_element(By.ID, "page-number").text == "Page 4", what="page 4 after ←")
    console.find("body").send_keys(Keys.ESCAPE)
    console.wait_for("#page-strip .cell.ok")
    assert console.browser_errors() == []


def test_pages_to_check_by_eye_are_marked_in_the_page_strip(start_server, console, sample_pdf):
    """With ``export.review_below: 1.0`` every page read by OCR (the sample's
    scans, pages 4 and 5) is flagged low_confidence: the strip marks them,
    names the flag in their title, lists them under it, and the page view
    shows the page's confidence and flags; the born-digital pages are plain."""
    srv = start_server(export={"review_below": 1.0})
    key = srv.create_key("console-review")
    with srv.http(key) as http:
        job = accepted(submit(http, sample_pdf, {"formats": ["json"]}))
        done = wait_terminal(http, job["id"], JOB_WAIT_S)
        assert done["state"] == "succeeded" and done["review_pages"] == [4, 5], done
        listed = {p["number"]: p for p in http.get(f"/v1/jobs/{job['id']}/pages").json()["pages"]}
    console.sign_in(srv.url, key.key)
    console.wait_for("#upload-files")
    console.go(f"#/jobs/{job['id']}")
    console.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#page-strip .cell.ok")) == 5, what="five done cells")
    cells = {c.get_attribute("data-page"): c for c in console.all("#page-strip .cell")}
    assert [n for n, c in cells.items() if "review" in c.get_attribute("class").split()] == ["4", "5"]
    for n in ("4", "5"):
        title = cells[n].get_attribute("title")
        assert "check by eye: low_confidence" in title, title
        assert f"confidence {listed[int(n)]['confidence']:.2f}" in title, title
        assert cells[n].get_attribute("data-flags") == "low_confidence"
    assert cells["1"].get_attribute("title") == "page 1: ok" and cells["1"].get_attribute("data-review") == "no"
    colours = {n: c.value_of_css_property("background-color") for n, c in cells.items()}
    assert colours["4"] == colours["5"] != colours["1"]              # a distinct cell, not the done green
    assert console.attrs("#review li", "data-page") == ["4", "5"]
    assert "low_confidence" in console.find("#review li").text
    console.shot("review-pages")
    cells["5"].click()
    flags = console.wait_for("#page-flags")
    assert flags.text.endswith("low_confidence")
    assert f"confidence {listed[5]['confidence']:.2f}" in console.find("#page-info").text
    console.shot("review-page-5")
    assert console.browser_errors() == []


def test_wrong_key_is_refused_with_a_clear_message(server, console):
    console.sign_in(server.url, "ld_" + "x" * 43)
    error = console.wait_for("#signin-error")
    assert error.get_attribute("data-code") == "unauthorized"
    assert "API key was not accepted" in error.text
    console.shot("wrong-key")
    assert console.driver.execute_script("return sessionStorage.getItem('longdoc.key')") is None
    console.go("#/jobs")
    console.wait_for("#api-key")   # still signed out


def test_another_tenants_job_is_not_found(server, console, sample_pdf):
    owner, other = server.create_key("console-owner"), server.create_key("console-other")
    with server.http(owner) as http:
        job = accepted(submit(http, sample_pdf, {"pages": "1-2"}))
    console.sign_in(server.url, other.key)
    console.wait_for("#jobs-body tr")
    assert not console.all(f'#jobs-body tr[data-job="{job["id"]}"]')
    console.go(f"#/jobs/{job['id']}")
    error = console.wait_for(".error[data-code]")
    assert error.get_attribute("data-code") == "job_not_found"
    assert "not found" in error.text
    console.shot("other-tenant-job")
    console.go(f"#/jobs/{job['id']}/pages/1")
    assert console.wait_for("#image-error").get_attribute("data-code") == "job_not_found"
    assert console.wait_for("#page-error").get_attribute("data-code") == "job_not_found"
    with server.http(owner) as http:
        wait_terminal(http, job["id"])


def test_upload_keeps_headers_and_footers_when_asked(server, console, sample_pdf):
    """The form's furniture choice reaches the job; "server default" sends none (export.furniture: drop)."""
    key = server.create_key("console-furniture")
    console.sign_in(server.url, key.key)
    console.wait_for("#upload-files")
    jobs = []
    for choice in ("keep", ""):
        console.driver.execute_script("document.getElementById('uploads').replaceChildren()")
        console.find("#opt-pages").clear()
        console.find("#opt-pages").send_keys("1-2")
        console.find(f'#opt-furniture option[value="{choice}"]').click()
        console.find("#upload-files").send_keys(str(sample_pdf))
        jobs.append(console.wait_for("#uploads li.ok a.accepted").get_attribute("href").rsplit("/", 1)[1])
    console.shot("furniture-keep")
    assert jobs[0] != jobs[1]
    with server.http(key) as http:
        for job_id, want in zip(jobs, ("keep", "drop")):
            assert wait_terminal(http, job_id)["state"] == "succeeded"
            assert http.get(f"/v1/jobs/{job_id}").json()["options"]["furniture"] == want
            txt = http.get(f"/v1/jobs/{job_id}/result", params={"format": "txt"}).text
            assert ("Page 1 of" in txt) is (want == "keep")
    assert console.browser_errors() == []


def test_upload_errors_say_what_went_wrong(start_server, console, sample_pdf, tmp_path):
    srv = start_server(limits={"max_upload_mb": 1})
    key = srv.create_key("console-errors", rate_limit=8)
    text_file = tmp_path / "notes.txt"
    text_file.write_text("plain text is not a document type the service reads\n" * 20)
    big = tmp_path / "big.pdf"
    big.write_bytes(b"%PDF-1.7\n" + os.urandom(3 * 2**20))
    console.sign_in(srv.url, key.key)
    console.wait_for("#upload-files")

    def upload(path: Path, pages: str = "") -> tuple[str, str]:
        console.driver.execute_script("document.getElementById('uploads').replaceChildren()")
        field = console.find("#opt-pages")
        field.clear()
        field.send_keys(pages)
        console.find("#upload-files").send_keys(str(path))
        error = console.wait_for("#uploads li.failed #upload-error")
        return error.get_attribute("data-code"), error.text

    code, text = upload(text_file)
    assert code == "unsupported_type" and "cannot be read" in text and "PDF" in text
    code, text = upload(sample_pdf, pages="40-50")
    assert code == "invalid_page_range" and "40-50" in text and "5 pages" in text
    console.shot("bad-page-range")
    code, text = upload(big)
    assert code == "upload_too_large" and "up to 1 MB" in text
    console.shot("too-large")
    for _ in range(10):   # the key allows 8 requests a minute
        code, text = upload(text_file)
        if code == "rate_limited":
            break
    assert code == "rate_limited", text
    seconds = int(text.split("Try again in ", 1)[1].split(" s", 1)[0])
    assert 0 < seconds <= 60
    console.shot("rate-limited")


def test_page_list_and_image_endpoints(server, sample_pdf):
    """The endpoints the console reads, as any client sees them."""
    key, other = server.create_key("console-api"), server.create_key("console-api-other")
    with server.http(key) as http:
        job = accepted(submit(http, sample_pdf, {"pages": "2-4"}))   # one scan: page 4
        listed = http.get(f"/v1/jobs/{job['id']}/pages").json()
        assert [p["number"] for p in listed["pages"]] == [2, 3, 4]
        done = wait_terminal(http, job["id"])
        assert done["state"] == "succeeded"
        listed = http.get(f"/v1/jobs/{job['id']}/pages").json()
        assert [(p["number"], p["status"]) for p in listed["pages"]] == [(n, "ok") for n in (2, 3, 4)]
        image = http.get(f"/v1/jobs/{job['id']}/pages/3/image", params={"dpi": 72})
        assert image.status_code == 200 and image.headers["content-type"] == "image/jpeg"
        assert image.content[:3] == b"\xff\xd8\xff"
        small = http.get(f"/v1/jobs/{job['id']}/pages/3/image", params={"dpi": 36}).content
        assert len(small) < len(image.content)
        assert http.get(f"/v1/jobs/{job['id']}/pages/1/image").json()["error"]["code"] == "page_not_found"
        assert http.get(f"/v1/jobs/{job['id']}/pages/9/image").status_code == 404
        assert http.get(f"/v1/jobs/{job['id']}/pages/3/image", params={"dpi": 5000}).status_code == 422
        md = http.get(f"/v1/jobs/{job['id']}/pages/3", params={"format": "md"})
        assert md.headers["content-type"].startswith("text/markdown") and "<!-- page 3 -->" in md.text
    with server.http(other) as http:
        for path in ("pages", "pages/3", "pages/3/image"):
            r = http.get(f"/v1/jobs/{job['id']}/{path}")
            assert r.status_code == 404 and r.json()["error"]["code"] == "job_not_found", path
    console_page = httpx.get(f"{server.url}/console/")
    assert console_page.status_code == 200 and "console.js" in console_page.text
    assert "frame-ancestors 'none'" in console_page.headers["content-security-policy"]
    assert httpx.get(f"{server.url}/", follow_redirects=False).headers["location"] == "/console/"


def test_the_page_viewer_says_which_block_a_continued_list_goes_on_from(server, console, tmp_path):
    from tests.docgen.continued import numbered_list

    doc = numbered_list(tmp_path)
    key = server.create_key("console-continued")
    with server.http(key) as http:
        job = wait_terminal(http, accepted(submit(http, doc.pdf_path, {"ocr": "off", "regions": False}))["id"])
        assert job["state"] == "succeeded", job
        page = http.get(f"/v1/jobs/{job['id']}/pages/2").json()
    (part,) = [b for b in page["blocks"] if b["kind"] == "list"]
    assert part["continues"]
    console.sign_in(server.url, key.key)
    console.wait_for("#jobs-body tr")
    console.go(f"#/jobs/{job['id']}/pages/2")
    item = console.wait_for(f'#blocks li[data-block="{part["id"]}"]')
    console.until(lambda d: item.find_elements(By.CSS_SELECTOR, ".continues"), what="the continues note")
    assert f"continues {part['continues']}" in item.find_element(By.CSS_SELECTOR, ".continues").text
    assert f"{doc.items_on(2)[0]}." in item.text            # the page's own items
    console.shot("continued-list-page-2")
