// The Documents page: the knowledge base's documents (GET /documents: title, status, chunk count, source), an
// upload (multipart POST /ingest, as `curl -F files=@...`) followed as its job runs (GET /v1/jobs/{id}: its status
// while it runs with each file's state, queued / reading, distilling and embedding / writing / done, then each file's
// outcome from its report), delete (DELETE /documents/{id}), and the ingestion runs
// (GET /runs: counts, failures and their reasons, newest first). Upload and delete are shown only to a key that may
// write (GET /rights; a 403 hides them too).

import { api, kbPath } from "./api.js";
import { $, clear, el, formatDate, notice } from "./dom.js";
import { app, events } from "./state.js";

const POLL_MS = 700;
let loading = null;

function canWrite() {
  return app.rights.write !== false;
}

function showRights() {
  $("#upload-form").hidden = !canWrite();
  const note = $("#readonly-note");
  note.hidden = canWrite();
  note.textContent = canWrite() ? "" : "This key may read this knowledge base but not change it: upload and delete "
    + `are not offered.${app.rightsNote ? ` (The server: ${app.rightsNote})` : ""}`;
  for (const cell of document.querySelectorAll(".actions-col")) cell.hidden = !canWrite();
}

function refused(err) {
  if (err.status !== 403) return false;
  app.rights = { ...app.rights, write: false };
  app.rightsNote = err.detail;
  showRights();
  renderRows(lastRows);
  return true;
}

let lastRows = [];

function renderRows(rows) {
  lastRows = rows;
  const body = clear($("#docs-body"));
  $("#docs-count").textContent = `${rows.length} document${rows.length === 1 ? "" : "s"} in ${app.kb}`;
  if (!rows.length) {
    body.append(el("tr", {}, el("td", { colspan: 6, class: "empty" }, "No document yet.")));
  }
  for (const doc of rows) {
    const title = doc.title || doc.id;
    const complete = doc.status === "complete";
    body.append(el("tr", { dataset: { id: doc.id } },
      el("td", {}, title),
      el("td", {}, el("span", { class: complete ? "pill" : "pill other" }, doc.status || "unknown")),
      el("td", { class: "num" }, String(doc.chunks ?? 0)),
      el("td", { class: "source" }, doc.uri || ""),
      el("td", {}, formatDate(doc.ingested_at)),
      el("td", { class: "actions-col", hidden: !canWrite() }, canWrite() && el("button", {
        type: "button", class: "secondary delete", "aria-label": `Delete ${title}`,
        onclick: () => remove(doc),
      }, "Delete"))));
  }
}

export async function loadDocuments() {
  if (loading) return loading;
  loading = (async () => {
    try {
      const data = await api(`${kbPath(app.kb, "/documents")}?limit=1000`);
      renderRows(data.documents || []);
    } catch (err) {
      renderRows([]);
      $("#docs-count").textContent = err.status === 404
        ? `No knowledge base ${app.kb} yet: an upload makes it.`
        : `The documents could not be listed: ${err.message}`;
    } finally {
      loading = null;
    }
  })();
  return loading;
}

function confirmDelete(doc) {
  const dialog = $("#confirm-dialog");
  $("#confirm-text").textContent = `“${doc.title || doc.id}” and its ${doc.chunks ?? 0} chunks leave the knowledge `
    + "base, with the entities no other document uses.";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
    $("#confirm-cancel").focus();
  });
}

async function remove(doc) {
  if (!(await confirmDelete(doc))) return;
  try {
    const done = await api(kbPath(app.kb, `/documents/${encodeURIComponent(doc.id)}`), { method: "DELETE" });
    const n = done.deleted || {};
    notice(`Deleted “${doc.title || doc.id}” (${n.chunks ?? 0} chunks).`, "info");
  } catch (err) {
    if (!refused(err)) notice(`The document was not deleted: ${err.message}`);
  }
  await loadDocuments();
}

/** What a file's state (GET /v1/jobs/{id}: `files`, kbgraph.serve.jobs.FileProgress) says, in words. */
const STATE_TEXT = {
  queued: "queued (the job waits for the one before it)",
  running: "reading, distilling and embedding",
  writing: "writing",
  done: "done",
};

function fileText(f) {
  if (f.outcome) {
    return `${f.name}: ${f.outcome}${f.chunks ? ` (${f.chunks} chunk${f.chunks === 1 ? "" : "s"})` : ""}`
      + `${f.reason ? ` — ${f.reason}` : ""}`;
  }
  return `${f.name}: ${STATE_TEXT[f.state] || f.state}${f.reason ? ` — ${f.reason}` : ""}`;
}

function jobSummary(job, files) {
  const r = job.report;
  const what = files.length === 1 ? files[0] : `${files.length} files`;
  let text = `${what}: ${job.status}`;
  if (r) {
    text += ` — ${r.added} added, ${r.updated} updated, ${r.unchanged} unchanged, ${r.failed} failed`;
    if (r.skipped) text += `, ${r.skipped} skipped`;
    const total = r.seconds && r.seconds.total;
    if (typeof total === "number" && total > 0) text += ` in ${total.toFixed(1)} s`;
  } else if (job.status === "running" && (job.files || []).length) {
    const done = job.files.filter((f) => f.state === "done").length;
    text += ` — ${done} of ${job.files.length} file${job.files.length === 1 ? "" : "s"} done`;
  }
  if (job.error) text += ` — ${job.error}`;
  return text;
}

/** The job's line: made once, then only its changed texts are replaced (the list is aria-live: a screen reader
 * hears each file's new state, not the whole job again on every poll). */
function jobLine(item, job, files) {
  item.className = `job ${job.status}`;
  item.dataset.job = job.id;
  let summary = item.querySelector(".summary");
  if (!summary) summary = item.appendChild(el("span", { class: "summary" }));
  const text = jobSummary(job, files);
  if (summary.textContent !== text) summary.textContent = text;
  const progress = (job.files || []).length ? job.files
    : files.map((name) => ({ name, state: job.status === "queued" ? "queued" : "running" }));
  let list = item.querySelector("ul.files");
  if (!list) list = item.appendChild(el("ul", { class: "files", "aria-label": "Each file" }));
  progress.forEach((f, i) => {
    let line = list.children[i];
    if (!line) line = list.appendChild(el("li"));
    line.className = `file ${f.state}${f.outcome ? ` ${f.outcome}` : ""}`;
    line.dataset.state = f.state;
    const words = fileText(f);
    if (line.textContent !== words) line.textContent = words;
  });
  while (list.children.length > progress.length) list.lastChild.remove();
  return item;
}

function count(value) {
  return value === null || value === undefined ? "" : String(value);
}

function renderRuns(runs) {
  const body = clear($("#runs-body"));
  $("#runs-count").textContent = `${runs.length} ingestion run${runs.length === 1 ? "" : "s"}${runs.length >= 20
    ? " (the newest 20)" : ""}`;
  if (!runs.length) body.append(el("tr", {}, el("td", { colspan: 10, class: "empty" }, "No ingestion run yet.")));
  for (const run of runs) {
    const ok = run.status === "completed";
    body.append(el("tr", { dataset: { run: run.id }, class: "run" },
      el("td", {}, formatDate(run.started_at)), el("td", {}, formatDate(run.finished_at)),
      el("td", {}, el("span", { class: ok ? "pill" : "pill other" }, run.status || "unknown")),
      ...["added", "updated", "unchanged", "deleted", "failed", "chunks"].map((k) => el("td", { class: `num ${k}` }, count(run[k]))),
      el("td", { class: "num" }, typeof run.seconds === "number" ? run.seconds.toFixed(1) : "")));
    if (run.scoped) {
      body.append(el("tr", { class: "run-documents" }, el("td", { colspan: 10 },
        `Wrote ${run.documents.length} of the documents this key may read: `
        + run.documents.map((d) => d.title || d.uri || d.id).join(", ")
        + ". (The run's status, counts and other files are not shown to a key scoped to documents.)")));
    }
    if ((run.errors || []).length) {
      body.append(el("tr", { class: "run-errors" }, el("td", { colspan: 10 },
        el("details", {}, el("summary", {}, `${run.errors.length} failure${run.errors.length === 1 ? "" : "s"} and why`),
          el("ul", { class: "errors" }, run.errors.map((line) => el("li", {}, line)))))));
    }
  }
}

export async function loadRuns() {
  try {
    const data = await api(`${kbPath(app.kb, "/runs")}?limit=20`);
    renderRuns(data.runs || []);
  } catch (err) {
    renderRuns([]);
    $("#runs-count").textContent = err.status === 404 ? "" : `The ingestion runs could not be listed: ${err.message}`;
  }
}

async function follow(job, files) {
  const line = jobLine(el("li"), job, files);
  $("#jobs").prepend(line);
  while (job.status === "queued" || job.status === "running") {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    try {
      job = await api(`/v1/jobs/${encodeURIComponent(job.id)}`);
    } catch (err) {
      job = { ...job, status: "failed", error: err.message };
    }
    jobLine(line, job, files);
    if (job.status === "running") loadDocuments();
  }
  await Promise.all([loadDocuments(), loadRuns()]);
}

async function upload(fileList) {
  const files = Array.from(fileList || []);
  if (!files.length) return;
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  $("#upload-button").disabled = true;
  try {
    const job = await api(kbPath(app.kb, "/ingest"), { method: "POST", form });
    $("#files").value = "";
    $("#files-chosen").textContent = "or drop files here: PDF, Word, HTML, Markdown, spreadsheets, …";
    await follow(job, files.map((f) => f.name));
  } catch (err) {
    if (!refused(err)) notice(`The upload was refused: ${err.message}`);
  } finally {
    $("#upload-button").disabled = !$("#files").files.length;
  }
}

export function showDocuments() {
  showRights();
  loadDocuments();
  loadRuns();
}

export function initDocuments() {
  const input = $("#files");
  input.addEventListener("change", () => {
    const n = input.files.length;
    $("#files-chosen").textContent = n ? Array.from(input.files).map((f) => f.name).join(", ") : "No file chosen";
    $("#upload-button").disabled = !n;
  });
  $("#upload-form").addEventListener("submit", (event) => {
    event.preventDefault();
    upload(input.files);
  });
  const zone = $("#dropzone");
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    upload(event.dataTransfer.files);
  });
  $("#docs-refresh").addEventListener("click", () => loadDocuments());
  $("#runs-refresh").addEventListener("click", () => loadRuns());
  events.addEventListener("kb", () => {
    clear($("#jobs"));
    if (document.body.dataset.page === "documents") showDocuments();
  });
}
