// The Ask page: a question, a method of the registry, the answer as it streams (the SSE of POST /ask), the
// citations as cards; a card opens its passage (GET /chunks/{id}) between its neighbours in reading order, and
// for a PDF its page as an image with the passage highlighted (GET /chunks/{id}/page.png).

import { api, ApiError, kbPath, sse } from "./api.js";
import { $, clear, el, notice, shorten } from "./dom.js";
import { app, emit, events } from "./state.js";

const NEIGHBOUR_LIMIT = 2000; // chunks of one document read to find a passage's neighbours (browse "document")
let controller = null;

function methodOptions() {
  const select = $("#method");
  clear(select);
  const defaults = app.meta.default_methods || {};
  select.append(el("option", { value: "" },
    `Server default (${defaults.llm || "auto"} with an LLM, ${defaults.no_llm || "propagation"} without)`));
  const groups = [
    ["Retrieval only (no LLM)", (m) => m.kind === "retrieval"],
    ["Answer methods (need an LLM)", (m) => m.kind === "answer"],
  ];
  for (const [label, keep] of groups) {
    const methods = (app.meta.methods || []).filter(keep);
    if (!methods.length) continue;
    select.append(el("optgroup", { label }, methods.map((m) => el("option", { value: m.name }, m.name))));
  }
  describeMethod();
}

function describeMethod() {
  const name = $("#method").value;
  const row = (app.meta.methods || []).find((m) => m.name === name);
  $("#method-summary").textContent = row
    ? `${row.name}: ${row.summary}${row.needs_llm ? " (needs an LLM on the server)" : ""}`
    : "The server chooses: PIKE-RAG's routing with an LLM, score propagation without.";
}

function status(text) {
  $("#ask-status").textContent = text;
}

function setBusy(busy) {
  $("#ask-button").disabled = busy;
  $("#ask-button").textContent = busy ? "Asking…" : "Ask";
  $("#answer").setAttribute("aria-busy", busy ? "true" : "false");
}

/** The answer's text with each [n] a button that shows citation n. */
function renderText(text, citations, streaming) {
  const box = clear($("#answer-text"));
  const parts = String(text || "").split(/(\[\d+\])/g);
  for (const part of parts) {
    const m = /^\[(\d+)\]$/.exec(part);
    const n = m ? Number(m[1]) : 0;
    if (n && citations[n - 1]) {
      box.append(el("button", {
        type: "button", class: "ref link", "aria-label": `citation ${n}: ${citations[n - 1].document_title}`,
        onclick: () => focusCard(n),
      }, `[${n}]`));
    } else if (part) box.append(part);
  }
  if (streaming) box.append(el("span", { class: "cursor", "aria-hidden": "true" }));
}

function focusCard(n) {
  const card = $(`#cite-${n}`);
  if (!card) return;
  card.scrollIntoView({ block: "nearest", behavior: "smooth" });
  card.focus();
}

function where(item) {
  const section = item.section_path ?? item.section;
  return [section, item.page ? `page ${item.page}` : ""].filter(Boolean).join(" · ");
}

function renderCitations(answer) {
  const list = clear($("#citations"));
  const citations = answer.citations || [];
  if (!citations.length) list.append(el("li", { class: "empty" }, "No citation: the answer rests on no passage."));
  citations.forEach((c, i) => {
    const n = i + 1;
    list.append(el("li", { id: `cite-${n}`, class: "card", tabindex: "-1", dataset: { chunk: c.chunk_id } },
      el("h3", {}, el("span", { class: "num" }, `[${n}]`), c.document_title || "Untitled document"),
      where(c) && el("p", { class: "where" }, where(c)),
      c.quote && el("p", { class: "quote" }, `“${shorten(c.quote, 220)}”`),
      el("button", {
        type: "button", class: "secondary open-passage", "aria-label": `Open passage ${n}: ${c.document_title}`,
        onclick: (event) => openPassage(c, n, event.currentTarget),
      }, "Open passage")));
  });
}

function renderRound(round) {
  const box = $("#rounds-box");
  box.hidden = false;
  const what = round.sub_question || round.missing_information || (round.proposals || []).join(" · ")
    || round.thinking || round.note || "";
  const picked = round.selected ? ` → ${shorten(round.selected.text, 120)}` : "";
  $("#rounds").append(el("li", {}, el("strong", {}, `Round ${round.round}`), `: ${shorten(what, 200)}${picked}`));
}

function renderMeta(answer, ms) {
  const bits = [`method ${answer.method}`];
  if (answer.retrieval_only) bits.push("retrieval only, no LLM: the best-matching evidence");
  if (answer.route) bits.push(`route ${answer.route}`);
  if (answer.usage && answer.usage.calls) bits.push(`${answer.usage.calls} LLM calls`);
  if (ms !== undefined) bits.push(`${Math.round(ms)} ms`);
  $("#answer-meta").textContent = bits.join(" · ");
}

async function ask() {
  const question = $("#question").value.trim();
  if (!question) {
    $("#question").focus();
    return;
  }
  if (controller) controller.abort();
  controller = new AbortController();
  const started = performance.now();
  notice("");
  setBusy(true);
  status("Asking…");
  closePassage();
  $("#answer").hidden = false;
  $("#rounds-box").hidden = true;
  clear($("#rounds"));
  clear($("#citations"));
  $("#answer-meta").textContent = "";
  renderText("", [], true);
  const body = { question, k: Number($("#k").value) || 5, explain: true, stream: true };
  if ($("#method").value) body.method = $("#method").value;
  try {
    const response = await api(kbPath(app.kb, "/ask"), {
      method: "POST", json: body, accept: "text/event-stream", signal: controller.signal,
    });
    let text = "";
    let answer = null;
    let first = null;
    for await (const { event, data } of sse(response)) {
      if (event === "delta") {
        first ??= performance.now();
        text += data.text || "";
        renderText(text, [], true);
      } else if (event === "reset") {
        text = "";
        renderText(text, [], true);
      } else if (event === "round") {
        renderRound(data);
      } else if (event === "answer") {
        first ??= performance.now();
        answer = data;
      } else if (event === "error") {
        throw new ApiError(data.status || 500, data.detail);
      }
    }
    if (!answer) throw new ApiError(0, "the answer stream ended without an answer");
    const ms = performance.now() - started;
    renderText(answer.answer, answer.citations || [], false);
    renderMeta(answer, ms);
    renderCitations(answer);
    app.answer = answer;
    app.timing = { first_ms: first - started, answer_ms: ms };
    const cites = (answer.citations || []).length;
    status(`Answered with ${cites} citation${cites === 1 ? "" : "s"}.`);
    emit("answer", answer);
  } catch (err) {
    if (err.name === "AbortError") return;
    status("");
    renderText("", [], false);
    $("#answer").hidden = true;
    notice(err.status === 403 ? `Not allowed: ${err.message}` : `The question was not answered: ${err.message}`);
  } finally {
    setBusy(false);
  }
}

// --- the passage panel -----------------------------------------------------------------------------------------
let passageFrom = null;
let pageUrl = null; // the object URL of the shown PDF page (revoked when another passage replaces it)
let pageFor = 0; // which openPassage call the page belongs to (a slow page of an older one is dropped)

function hidePage() {
  pageFor += 1;
  $("#passage-page").hidden = true;
  $("#passage-page-img").removeAttribute("src");
  if (pageUrl) URL.revokeObjectURL(pageUrl);
  pageUrl = null;
}

/** The chunk's PDF page with its passage highlighted (GET /chunks/{id}/page.png): fetched with the tab's key as
 * a Blob and shown through an object URL, since an <img src> cannot send the Authorization header. Nothing is
 * shown for a chunk that is not from a PDF (404) or when the page cannot be read. */
async function showPage(chunk) {
  hidePage();
  const mine = pageFor;
  if (!chunk.page || !/\.pdf$/i.test(String(chunk.document_uri || "").split("#")[0])) return;
  try {
    const blob = await api(kbPath(app.kb, `/chunks/${encodeURIComponent(chunk.id)}/page.png`), { accept: "image/png" });
    if (mine !== pageFor) return;
    pageUrl = URL.createObjectURL(blob);
    const img = $("#passage-page-img");
    const title = chunk.document_title || "the document";
    img.alt = `Page ${chunk.page} of ${title}, the cited passage highlighted in yellow`;
    img.src = pageUrl;
    $("#passage-page-caption").textContent = `Page ${chunk.page} of ${title}, as printed (the passage highlighted)`;
    $("#passage-page").hidden = false;
  } catch { /* the passage stands without its page */ }
}

function closePassage() {
  hidePage();
  $("#passage").hidden = true;
  $(".ask-layout").classList.remove("with-passage");
  for (const card of document.querySelectorAll(".card.active")) card.classList.remove("active");
  if (passageFrom && document.contains(passageFrom)) passageFrom.focus();
  passageFrom = null;
}

function contextBlock(node, label, chunk) {
  clear(node);
  if (!chunk) return;
  node.append(el("span", { class: "context-label" }, label), shorten(chunk.text || chunk.summary || "", 600));
}

/** The chunk's neighbours in its document's reading order (the NEXT chain), from the ready browse query
 * "document" (the API has no neighbours route yet): {before, after}, each a chunk's properties or null. */
async function neighbours(chunk) {
  if (!chunk.document_id) return { before: null, after: null };
  const params = new URLSearchParams({ document: chunk.document_id, limit: String(NEIGHBOUR_LIMIT), per_chunk: "0" });
  const rows = (await api(`${kbPath(app.kb, "/browse/document")}?${params}`)).rows || [];
  const i = rows.findIndex((r) => r.chunk && r.chunk.id === chunk.id);
  if (i < 0) return { before: null, after: null };
  return { before: i > 0 ? rows[i - 1].chunk : null, after: i + 1 < rows.length ? rows[i + 1].chunk : null };
}

/** [start, end) of the citation's quote in the chunk's text: the quote itself (a sentence of the passage), or
 * for a table row quoted as "Header: value; Header: value; …" the line of the table holding its first values. */
export function findQuote(text, quote) {
  const q = String(quote || "").replace(/…$/, "").trim();
  if (!q || !text) return null;
  for (const probe of [q, q.slice(0, 120), q.slice(0, 60)]) {
    const i = text.indexOf(probe);
    if (probe.length >= 12 && i >= 0) return [i, i + probe.length];
  }
  const values = q.split(";").map((part) => part.split(":").slice(1).join(":").trim()).filter(Boolean).slice(0, 2);
  if (!values.length) return null;
  let start = 0;
  for (const line of text.split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim());
    if (values.every((v) => cells.includes(v))) return [start, start + line.length];
    start += line.length + 1;
  }
  return null;
}

function showPassageText(node, text, quote) {
  clear(node);
  const range = findQuote(text, quote);
  if (!range) {
    node.textContent = text;
    return null;
  }
  const mark = el("mark", {}, text.slice(range[0], range[1]));
  node.append(text.slice(0, range[0]), mark, text.slice(range[1]));
  return mark;
}

async function openPassage(citation, n, from) {
  passageFrom = from || null;
  for (const card of document.querySelectorAll(".card.active")) card.classList.remove("active");
  $(`#cite-${n}`)?.classList.add("active");
  const panel = $("#passage");
  panel.hidden = false;
  $(".ask-layout").classList.add("with-passage");
  $("#passage-h").textContent = `[${n}] ${citation.document_title || "Cited passage"}`;
  $("#passage-where").textContent = "Loading the passage…";
  clear($("#passage-text"));
  clear($("#passage-before"));
  clear($("#passage-after"));
  $("#passage-source").textContent = "";
  hidePage();
  $("#passage-h").focus();
  try {
    const chunk = await api(kbPath(app.kb, `/chunks/${encodeURIComponent(citation.chunk_id)}`));
    $("#passage-where").textContent = [where(chunk), chunk.kind && chunk.kind !== "text" ? chunk.kind : ""]
      .filter(Boolean).join(" · ");
    const mark = showPassageText($("#passage-text"), chunk.text || chunk.summary || "", citation.quote);
    $("#passage-text").dataset.chunk = chunk.id;
    $("#passage-source").textContent = chunk.document_uri ? `Source: ${chunk.document_uri}` : "";
    const page = showPage(chunk);
    try {
      const { before, after } = await neighbours(chunk);
      contextBlock($("#passage-before"), "Before", before);
      contextBlock($("#passage-after"), "After", after);
    } catch { /* the passage stands without its neighbours */ }
    if (mark) { // the highlight in view inside the passage's box (the panel's head stays in view)
      const box = $("#passage-text");
      box.scrollTop = Math.max(0, mark.offsetTop - box.clientHeight / 3);
    }
    await page;
  } catch (err) {
    $("#passage-where").textContent = `The passage could not be read: ${err.message}`;
  }
}

export function initAsk() {
  methodOptions();
  $("#method").addEventListener("change", describeMethod);
  $("#ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    ask();
  });
  $("#question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("#ask-form").requestSubmit();
    }
  });
  $("#passage-close").addEventListener("click", closePassage);
  $("#passage").addEventListener("keydown", (event) => {
    if (event.key === "Escape") closePassage();
  });
  events.addEventListener("kb", () => {
    $("#answer").hidden = true;
    closePassage();
    status("");
  });
}
