// The console's views, chosen by the URL's hash:
//   #/signin                 paste an API key
//   #/jobs                   upload, and the tenant's jobs (filter by state)
//   #/jobs/ID                one job, followed live: progress, page strip, cancel, downloads
//   #/jobs/ID/pages/N        page N's image beside its blocks and Markdown
// Everything shown comes from the public API (api.js); text from documents
// is always set as text, never parsed as HTML.

import { apiKey, setKey, clearKey, ApiError, request, getJSON, getText, getBlob, submit, follow, describe }
  from "./api.js";

const app = document.getElementById("app");
// formats, states and block kinds as the server defines them (GET /v1/meta, read once at start)
let STATES = [];
let TERMINAL = new Set();
let WITH_RESULTS = new Set();
let FORMATS = [];
let DEFAULT_FORMATS = new Set();
let FORMAT_LABELS = {};   // what each format is called on a button
let FILE_NAMES = {};      // the file name suffix it is saved under (as the CLI names them)
let KINDS = [];
let OPTIONS = {};         // each job option's JSON schema (type, choices, bounds, description)

async function loadMeta() {
  const meta = await getJSON("/v1/meta");
  STATES = meta.states;
  TERMINAL = new Set(meta.terminal_states);
  WITH_RESULTS = new Set(meta.result_states);
  FORMATS = meta.formats.map((f) => f.name);
  DEFAULT_FORMATS = new Set(meta.formats.filter((f) => f.default).map((f) => f.name));
  FORMAT_LABELS = Object.fromEntries(meta.formats.map((f) => [f.name, f.label]));
  FILE_NAMES = Object.fromEntries(meta.formats.map((f) => [f.name, f.file_suffix]));
  KINDS = meta.block_kinds;
  OPTIONS = meta.options.properties;
}

// a job option's schema without its null branch (null: the server's setting)
function option(name) {
  const schema = OPTIONS[name] || {};
  return { ...schema, ...((schema.anyOf || []).find((s) => s.type !== "null") || {}) };
}

// a select of the option's choices; "server default" first, which sends nothing
function choices(id, name) {
  const values = [["", "server default"], ...(option(name).enum || []).map((v) => [v, v])];
  return h("select", { id }, values.map(([v, l]) => h("option", { value: v }, l)));
}

const VIEW_DPI = 110;
const PAGES_EVERY_MS = 2000;

let leave = () => {};   // what the current view must stop (streams, timers, listeners) when the next one opens

// -- small DOM helpers ------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function errorBox(err, id = "error") {
  const code = err instanceof ApiError ? err.code : "error";
  return h("div", { class: "error", id, role: "alert", dataset: { code } },
    h("strong", {}, describe(err)), " ", h("code", {}, code));
}

function show(...nodes) { app.replaceChildren(...nodes); }

function seconds(s) {
  if (s == null || !isFinite(s)) return "–";
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

function duration(job) {
  if (!job.started_at) return null;
  const end = job.finished_at ? Date.parse(job.finished_at) : Date.now();
  return (end - Date.parse(job.started_at)) / 1000;
}

function stateBadge(state) { return h("span", { class: `state state-${state}`, dataset: { state } }, state); }

function stem(filename) { return (filename || "document").replace(/\.[^.]+$/, "") || "document"; }

// -- routing -------------------------------------------------------------------

function route() {
  leave();
  leave = () => {};
  const hash = location.hash || "#/jobs";
  document.getElementById("sign-out").hidden = !apiKey();
  document.getElementById("who").textContent = apiKey() ? `key ${apiKey().slice(0, 12)}…` : "";
  if (!apiKey() && hash !== "#/signin") { location.hash = "#/signin"; return; }
  let m;
  if (hash === "#/signin") signIn();
  else if ((m = hash.match(/^#\/jobs\/([0-9a-f]{1,64})\/pages\/(\d+)$/))) pageView(m[1], Number(m[2]));
  else if ((m = hash.match(/^#\/jobs\/([^/]+)$/))) jobView(decodeURIComponent(m[1]));
  else jobsView();
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", async () => {
  document.getElementById("sign-out").addEventListener("click", () => { clearKey(); location.hash = "#/signin"; });
  try { await loadMeta(); } catch (err) { app.replaceChildren(errorBox(err, "meta-error")); return; }
  route();
});

// -- sign in ---------------------------------------------------------------------

function signIn() {
  const input = h("input", { id: "api-key", type: "password", autocomplete: "off", spellcheck: "false",
    placeholder: "ld_…", required: true, size: 60 });
  const status = h("div", { id: "signin-status" });
  const form = h("form", { id: "signin", class: "card", onsubmit: async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    setKey(key);
    status.replaceChildren(h("span", { class: "muted" }, "Checking the key…"));
    try {
      await getJSON("/v1/jobs?limit=1");
      location.hash = "#/jobs";
    } catch (err) {
      clearKey();
      status.replaceChildren(errorBox(err, "signin-error"));
    }
  } },
  h("h1", {}, "Sign in"),
  h("p", {}, "Paste an API key (", h("code", {}, "make run"), " printed one and keeps it in ",
    h("code", {}, "data/dev-api-key"), "; an admin makes more with ", h("code", {}, "longdoc keys create"),
    "). It stays in this tab's session storage and goes to the server as ", h("code", {}, "Authorization: Bearer"), "."),
  h("label", {}, "API key ", input), " ", h("button", { type: "submit", id: "signin-submit" }, "Sign in"),
  status);
  show(form);
  input.focus();
}

// -- jobs: upload and list ----------------------------------------------------------

function jobsView() {
  const filter = h("select", { id: "state-filter", onchange: () => { cursor = null; load(false); } },
    h("option", { value: "" }, "all states"), STATES.map((s) => h("option", { value: s }, s)));
  const body = h("tbody", { id: "jobs-body" });
  const more = h("button", { type: "button", id: "jobs-more", hidden: true, onclick: () => load(true) }, "Older jobs");
  const status = h("div", { id: "jobs-status" });
  let cursor = null;
  let timer = null;
  let alive = true;
  leave = () => { alive = false; clearTimeout(timer); };

  async function load(append) {
    clearTimeout(timer);
    const params = new URLSearchParams({ limit: "50" });
    if (filter.value) params.set("state", filter.value);
    if (append && cursor) params.set("cursor", cursor);
    try {
      const page = await getJSON(`/v1/jobs?${params}`);
      if (!alive) return;
      if (!append) body.replaceChildren();
      body.append(...page.items.map(jobRow));
      if (!append && page.items.length === 0) {
        body.append(h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No jobs yet: upload a document above.")));
      }
      cursor = page.next;
      more.hidden = !cursor;
      status.replaceChildren();
      const busy = page.items.some((j) => !TERMINAL.has(j.state));
      if (busy && !append) timer = setTimeout(() => load(false), 2000);
    } catch (err) {
      if (!alive) return;
      if (err.code === "unauthorized") { clearKey(); location.hash = "#/signin"; return; }
      status.replaceChildren(errorBox(err));
    }
  }

  show(uploadCard(() => load(false)),
    h("section", { class: "card" },
      h("div", { class: "row" }, h("h2", {}, "Jobs"), h("label", {}, "State ", filter)),
      status,
      h("table", { class: "jobs", id: "jobs" },
        h("thead", {}, h("tr", {}, ["File", "State", "Pages", "Engine", "Duration", "Submitted"].map((t) => h("th", {}, t)))),
        body),
      more));
  load(false);
}

function jobRow(job) {
  const pages = job.pages_total != null ? `${job.pages_done} / ${job.pages_total}` : `${job.pages_done}`;
  return h("tr", { dataset: { job: job.id } },
    h("td", {}, h("a", { href: `#/jobs/${job.id}`, class: "job-link" }, job.filename)),
    h("td", {}, stateBadge(job.state)),
    h("td", { class: "num" }, pages, job.failed_pages.length ? h("span", { class: "bad" }, ` (${job.failed_pages.length} failed)`) : ""),
    h("td", {}, job.engine || h("span", { class: "muted" }, "–")),
    h("td", { class: "num" }, seconds(duration(job))),
    h("td", {}, new Date(job.created_at).toLocaleString()));
}

function uploadCard(onAccepted) {
  const files = h("input", { type: "file", id: "upload-files", multiple: true,
    accept: ".pdf,.png,.jpg,.jpeg,.tif,.tiff,.bmp,.webp,application/pdf,image/*" });
  // choices, bounds and what each option means come from GET /v1/meta (the options' schema)
  const pages = h("input", { id: "opt-pages", placeholder: "all (e.g. 1-20,35)", size: 18,
    maxLength: option("pages").maxLength });
  const ocr = choices("opt-ocr", "ocr");
  const furniture = choices("opt-furniture", "furniture");
  const profile = choices("opt-profile", "profile");
  const priority = h("input", { id: "opt-priority", type: "number", min: option("priority").minimum,
    max: option("priority").maximum, value: option("priority").default, size: 3 });
  const formats = FORMATS.map((f) => h("input", { type: "checkbox", id: `opt-format-${f}`, value: f,
    checked: DEFAULT_FORMATS.has(f) }));
  const list = h("ul", { id: "uploads", class: "uploads" });
  const drop = h("div", { class: "drop", id: "drop" }, "Drop PDFs or images here, or ", files);

  function options() {
    const o = { formats: formats.filter((c) => c.checked).map((c) => c.value),
      priority: Number(priority.value || 0) };
    if (pages.value.trim()) o.pages = pages.value.trim();
    if (ocr.value) o.ocr = ocr.value;
    if (furniture.value) o.furniture = furniture.value;
    if (profile.value) o.profile = profile.value;
    return o;
  }

  async function send(fileList) {
    for (const file of fileList) {
      const bar = h("progress", { max: 1, value: 0 });
      const note = h("span", { class: "muted" }, "uploading…");
      const item = h("li", { dataset: { file: file.name } }, h("strong", {}, file.name), " ", bar, " ", note);
      list.prepend(item);
      try {
        const job = await submit(file, options(), (f) => { bar.value = f; });
        bar.value = 1;
        note.replaceChildren("accepted: ", h("a", { href: `#/jobs/${job.id}`, class: "accepted" }, `job ${job.id.slice(0, 8)}`),
          ` (${job.pages_total ?? "?"} pages, ${job.state})`);
        item.classList.add("ok");
        onAccepted(job);
      } catch (err) {
        bar.remove();
        note.replaceChildren(errorBox(err, "upload-error"));
        item.classList.add("failed");
      }
    }
  }

  files.addEventListener("change", () => { send([...files.files]); files.value = ""; });
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); send([...e.dataTransfer.files]); });

  return h("section", { class: "card" }, h("h2", {}, "Upload"), drop,
    h("div", { class: "options" },
      h("label", { title: option("pages").description }, "Pages ", pages),
      h("label", { title: option("ocr").description }, "OCR ", ocr),
      h("label", { title: option("profile").description }, "Profile ", profile),
      h("label", { title: option("furniture").description }, "Headers/footers ", furniture),
      h("span", {}, "Formats ", formats.map((c) => h("label", { class: "inline", title: FORMAT_LABELS[c.value] },
        c, ` ${c.value}`))),
      h("label", { title: option("priority").description }, "Priority ", priority)),
    list);
}

// -- one job -----------------------------------------------------------------------

function jobView(id) {
  const controller = new AbortController();
  let refreshTimer = null;
  let lastPagesDone = -1;
  let lastPagesLoad = 0;
  let pagesSeq = 0;
  const samples = [];   // [time ms, pages done] while running, for pages/s
  leave = () => { controller.abort(); clearTimeout(refreshTimer); };

  const title = h("h1", { id: "job-title" }, "Job ", h("code", {}, id));
  const state = h("span", { id: "job-state" });
  const bar = h("progress", { id: "job-progress", max: 1, value: 0 });
  const figures = h("div", { id: "job-figures", class: "figures" });
  const strip = h("div", { id: "page-strip", class: "strip", role: "list" });
  const failures = h("ul", { id: "failures", class: "failures" });
  const review = h("ul", { id: "review", class: "review" });
  const actions = h("div", { class: "actions", id: "job-actions" });
  const problem = h("div", { id: "job-problem" });
  show(h("section", { class: "card" }, h("p", {}, h("a", { href: "#/jobs" }, "← all jobs")), title,
    h("div", { class: "row" }, state, bar, figures), problem, actions,
    h("h2", {}, "Pages"), h("p", { class: "muted legend" },
      h("span", { class: "cell ok" }), " done ", h("span", { class: "cell ok review" }), " done, to check by eye ",
      h("span", { class: "cell failed" }), " failed ", h("span", { class: "cell pending" }),
      " pending: click a page to see it beside its scan."),
    strip, failures, review));

  function render(job) {
    title.replaceChildren(job.filename, " ", h("code", { class: "muted" }, job.id.slice(0, 8)));
    state.replaceChildren(stateBadge(job.state), job.cancel_requested && !TERMINAL.has(job.state) ? " (cancelling)" : "");
    const total = job.pages_total || 0;
    bar.max = Math.max(total, 1);
    bar.value = job.pages_done;
    const now = Date.now();
    if (job.state === "running") samples.push([now, job.pages_done]);
    while (samples.length > 2 && now - samples[0][0] > 60000) samples.shift();
    let rate = null;
    if (samples.length >= 2 && samples.at(-1)[1] > samples[0][1]) {
      rate = (samples.at(-1)[1] - samples[0][1]) / ((samples.at(-1)[0] - samples[0][0]) / 1000);
    } else if (job.started_at && job.pages_done) {
      rate = job.pages_done / Math.max(duration(job), 0.001);
    }
    const eta = rate && job.state === "running" ? (total - job.pages_done) / rate : null;
    figures.replaceChildren(
      h("span", { id: "fig-pages" }, `${job.pages_done} / ${total || "?"} pages`),
      h("span", { id: "fig-rate" }, rate ? `${rate.toFixed(2)} pages/s` : "– pages/s"),
      h("span", { id: "fig-eta" }, job.state === "running" ? `ETA ${seconds(eta)}` :
        job.state === "queued" ? `queue position ${job.queue_position ?? "?"}` : `took ${seconds(duration(job))}`),
      job.engine ? h("span", {}, `engine ${job.engine}`) : "");
    problem.replaceChildren(job.error ? h("div", { class: "error", role: "alert", dataset: { code: job.error.code } },
      h("strong", {}, job.error.message || "The job failed."), " ", h("code", {}, job.error.code)) : "");
    renderActions(job);
    if (job.pages_done !== lastPagesDone || TERMINAL.has(job.state)) {
      lastPagesDone = job.pages_done;
      schedulePages(TERMINAL.has(job.state));
    }
  }

  function renderActions(job) {
    const buttons = [];
    if (!TERMINAL.has(job.state) && !job.cancel_requested) {
      buttons.push(h("button", { type: "button", id: "cancel", class: "danger", onclick: async () => {
        if (!confirm(`Cancel ${job.filename}? Pages done so far are kept until the job ends.`)) return;
        try { render(await (await request(`/v1/jobs/${id}`, { method: "DELETE" })).json()); }
        catch (err) { problem.replaceChildren(errorBox(err)); }
      } }, "Cancel"));
    }
    if (WITH_RESULTS.has(job.state)) {
      for (const fmt of job.options.formats || []) {
        buttons.push(h("button", { type: "button", id: `download-${fmt}`, onclick: () => download(job, fmt) },
          `Download ${FORMAT_LABELS[fmt] || fmt}`));
      }
    }
    actions.replaceChildren(...buttons);
  }

  async function download(job, fmt) {
    try {
      const blob = await getBlob(`/v1/jobs/${id}/result?format=${fmt}`);
      const url = URL.createObjectURL(blob);
      const a = h("a", { href: url, download: `${stem(job.filename)}${FILE_NAMES[fmt] || `.${fmt}`}` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (err) { problem.replaceChildren(errorBox(err)); }
  }

  // the page list is fetched at most every PAGES_EVERY_MS while pages come in, and once more at the end
  function schedulePages(final) {
    if (refreshTimer && !final) return;
    clearTimeout(refreshTimer);
    const wait = final ? 0 : Math.max(0, lastPagesLoad + PAGES_EVERY_MS - Date.now());
    refreshTimer = setTimeout(() => { refreshTimer = null; lastPagesLoad = Date.now(); loadPages(); }, wait);
  }

  function pageCell(p) {
    const why = p.status === "failed" && p.error ? ` (${p.error.code})` : "";
    const flags = p.flags && p.flags.length ? ` · ${p.review ? "check by eye: " : ""}${p.flags.join(", ")}` : "";
    const confidence = p.confidence != null ? ` · confidence ${p.confidence.toFixed(2)}` : "";
    return h("a", { class: `cell ${p.status}${p.review ? " review" : ""}`, role: "listitem",
      href: `#/jobs/${id}/pages/${p.number}`, title: `page ${p.number}: ${p.status}${why}${flags}${confidence}`,
      dataset: { page: p.number, status: p.status, flags: (p.flags || []).join(" "), review: p.review ? "yes" : "no" } },
      String(p.number));
  }

  async function loadPages() {
    const seq = ++pagesSeq;
    try {
      const list = await getJSON(`/v1/jobs/${id}/pages`, { signal: controller.signal });
      if (seq !== pagesSeq) return;   // a later load is on its way
      // a cell that has not changed stays the same element: no flicker, and a click or a focus on it survives the refresh
      const shown = new Map([...strip.querySelectorAll("a.cell")].map((c) => [c.dataset.page, c]));
      strip.replaceChildren(...list.pages.map((p) => {
        const cell = pageCell(p);
        const old = shown.get(String(p.number));
        return old && old.outerHTML === cell.outerHTML ? old : cell;
      }));
      failures.replaceChildren(...list.pages.filter((p) => p.status === "failed").map((p) =>
        h("li", {}, h("a", { href: `#/jobs/${id}/pages/${p.number}` }, `page ${p.number}`), ": ",
          h("code", {}, p.error ? p.error.code : "failed"), " ", p.error ? p.error.message : "")));
      review.replaceChildren(...list.pages.filter((p) => p.review).map((p) =>
        h("li", { dataset: { page: p.number } }, h("a", { href: `#/jobs/${id}/pages/${p.number}` }, `page ${p.number}`),
          ": check by eye (", h("code", {}, p.flags.join(", ")), ")",
          p.confidence != null ? ` · confidence ${p.confidence.toFixed(2)}` : "")));
    } catch (err) {
      if (err.name !== "AbortError") strip.replaceChildren(errorBox(err, "pages-error"));
    }
  }

  (async () => {
    for (let attempt = 0; !controller.signal.aborted; attempt++) {
      let ended = false;
      try {
        await follow(`/v1/jobs/${id}/events`, (name, data) => {
          if (name === "progress") render(data);
          if (name === "end") ended = true;
        }, controller.signal);
      } catch (err) {
        if (err.name === "AbortError") return;
        if (err instanceof ApiError && err.status && err.status < 500) {   // not found, expired, bad key: final
          show(h("section", { class: "card" }, h("p", {}, h("a", { href: "#/jobs" }, "← all jobs")), errorBox(err)));
          return;
        }
        problem.replaceChildren(errorBox(err));
      }
      if (ended) return;
      await new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** attempt, 10000)));   // the stream broke: follow again
    }
  })();
}

// -- one page ------------------------------------------------------------------------

async function pageView(id, number) {
  const controller = new AbortController();
  let imageUrl = null;
  let selection = null;
  const onKey = (e) => {
    if (e.target.closest && e.target.closest("input, textarea, select")) return;
    if (["ArrowRight", "j", "PageDown"].includes(e.key)) step(+1);
    else if (["ArrowLeft", "k", "PageUp"].includes(e.key)) step(-1);
    else if (e.key === "Escape") location.hash = `#/jobs/${id}`;
    else return;
    e.preventDefault();
  };
  document.addEventListener("keydown", onKey);
  leave = () => {
    controller.abort();
    document.removeEventListener("keydown", onKey);
    if (imageUrl) URL.revokeObjectURL(imageUrl);
  };

  function step(delta) {
    const numbers = selection || [];
    const i = numbers.indexOf(number);
    const next = i >= 0 ? numbers[i + delta] : number + delta;
    if (next != null && next >= 1) location.hash = `#/jobs/${id}/pages/${next}`;
  }

  const img = h("img", { id: "page-image", alt: `page ${number}` });
  const overlay = h("div", { id: "boxes", class: "boxes" });
  const figure = h("div", { class: "scan", id: "scan" }, img, overlay);
  const blocks = h("ol", { id: "blocks", class: "blocks" });
  const markdown = h("pre", { id: "page-markdown", class: "markdown" });
  const info = h("div", { id: "page-info", class: "muted" });
  const nav = h("div", { class: "row" },
    h("a", { href: `#/jobs/${id}` }, "← job"),
    h("button", { type: "button", id: "prev-page", onclick: () => step(-1) }, "← previous"),
    h("strong", { id: "page-number" }, `Page ${number}`),
    h("button", { type: "button", id: "next-page", onclick: () => step(+1) }, "next →"),
    h("span", { class: "muted" }, "keys: ← → (or j k) to step, Esc back"));
  const legend = h("div", { class: "legend" }, KINDS.map((k) => h("span", { class: `chip kind-${k}` }, k)));
  show(h("section", { class: "card" }, nav, info,
    h("div", { class: "viewer" }, h("div", { class: "left" }, figure, legend),
      h("div", { class: "right" }, h("h3", {}, "Blocks in reading order"), blocks, h("h3", {}, "Markdown"), markdown))));

  const signal = controller.signal;
  getJSON(`/v1/jobs/${id}/pages`, { signal }).then((list) => { selection = list.pages.map((p) => p.number); })
    .catch(() => {});
  getBlob(`/v1/jobs/${id}/pages/${number}/image?dpi=${VIEW_DPI}`, { signal }).then((blob) => {
    imageUrl = URL.createObjectURL(blob);
    img.src = imageUrl;
  }).catch((err) => { if (err.name !== "AbortError") figure.replaceChildren(errorBox(err, "image-error")); });

  let page;
  try {
    page = await getJSON(`/v1/jobs/${id}/pages/${number}`, { signal });
  } catch (err) {
    if (err.name === "AbortError") return;
    const text = err.code === "page_not_ready" ? "This page is not finished yet; the scan is shown alone." : null;
    info.replaceChildren(text ? h("span", { id: "page-pending" }, text) : errorBox(err, "page-error"));
    return;
  }
  const source = page.text_source ? `${page.text_source}` : "no text";
  info.replaceChildren(`${page.status} · ${source}${page.engine ? ` · ${page.engine}` : ""}`,
    page.rotation ? ` · turned ${page.rotation}°` : "",
    page.confidence != null ? ` · confidence ${page.confidence.toFixed(2)}` : "",
    page.flags && page.flags.length ? h("span", { id: "page-flags" }, " · ", h("code", {}, page.flags.join(", "))) : "",
    page.error ? h("div", { class: "error", dataset: { code: page.error.code } }, page.error.message, " ",
      h("code", {}, page.error.code)) : "");
  const ordered = [...page.blocks].sort((a, b) => a.order - b.order);
  for (const block of ordered) {
    const boxes = page.width > 0 ? segments(block, page.number).map((bbox, i) => {
      const box = h("div", { class: `box kind-${block.kind}${i ? " more" : ""}`, dataset: { block: block.id, kind: block.kind } },
        i ? null : h("span", { class: "order" }, String(block.order + 1)));
      Object.assign(box.style, {
        left: `${(100 * bbox.x0) / page.width}%`, top: `${(100 * bbox.y0) / page.height}%`,
        width: `${(100 * (bbox.x1 - bbox.x0)) / page.width}%`, height: `${(100 * (bbox.y1 - bbox.y0)) / page.height}%`,
      });
      return box;
    }) : [];
    overlay.append(...boxes);
    const item = h("li", { class: `kind-${block.kind}`, dataset: { block: block.id, kind: block.kind } },
      h("span", { class: `chip kind-${block.kind}` }, block.kind), " ",
      block.continues ? h("span", { class: "continues muted", title: `goes on from block ${block.continues}` },
        `continues ${block.continues} · `) : "",
      block.text.slice(0, 400));
    const light = (on) => { for (const b of boxes) b.classList.toggle("lit", on); item.classList.toggle("lit", on); };
    for (const el of [item, ...boxes]) {
      el.addEventListener("mouseenter", () => light(true));
      el.addEventListener("mouseleave", () => light(false));
    }
    blocks.append(item);
  }
  if (!ordered.length) blocks.append(h("li", { class: "muted" }, "No blocks on this page."));
  try {
    markdown.textContent = await getText(`/v1/jobs/${id}/pages/${number}?format=md`, { signal });
  } catch (err) { if (err.name !== "AbortError") markdown.replaceChildren(errorBox(err, "markdown-error")); }
}

/** Where a block sits on page `number`: its box, or one box per column it
 * runs through (a paragraph continued at the top of the next column), so
 * the boxes cover its lines and not the gap between them. */
function segments(block, number) {
  const lines = (block.lines || []).filter((l) => l.page === number);
  if (lines.length < 2 || ["table", "figure", "formula"].includes(block.kind)) return [block.bbox];
  const runs = [];
  let previous = null;
  for (const { bbox } of lines) {
    const run = runs.at(-1);
    const wentUp = previous && bbox.y0 < previous.y0 - 1;
    const beside = run && (bbox.x0 >= run.x1 || bbox.x1 <= run.x0);
    if (!run || (wentUp && beside)) runs.push({ ...bbox });
    else Object.assign(run, { x0: Math.min(run.x0, bbox.x0), y0: Math.min(run.y0, bbox.y0),
      x1: Math.max(run.x1, bbox.x1), y1: Math.max(run.y1, bbox.y1) });
    previous = bbox;
  }
  return runs;
}
