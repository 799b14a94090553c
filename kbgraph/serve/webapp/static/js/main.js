// The web app of kbgraph serve: pages Ask, Why, Explore and Documents (hash routes), the knowledge base picker and the API
// key. No framework, no build step: ES modules served by the server itself (kbgraph/serve/webapp).

import { api, ApiError, kbPath, onUnauthorized, session } from "./api.js";
import { $, $$, notice } from "./dom.js";
import { app, emit } from "./state.js";
import { initAsk } from "./ask.js";
import { initWhy, showWhy } from "./why.js";
import { initDocuments, showDocuments } from "./documents.js";
import { initExplore, showExplore } from "./explore.js";

const PAGES = {
  ask: { title: "Ask", show: () => {} },
  why: { title: "Why this answer", show: showWhy },
  explore: { title: "Explore", show: showExplore },
  documents: { title: "Documents", show: showDocuments },
};
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function pageOf(hash) {
  const name = (hash || "").replace(/^#\/?/, "");
  return PAGES[name] ? name : null;
}

function route(focus = true) {
  const name = pageOf(location.hash) || "ask";
  for (const section of $$("section.page")) section.hidden = section.dataset.page !== name;
  for (const link of $$("[data-nav]")) {
    if (link.dataset.nav === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${PAGES[name].title} · kbgraph`;
  document.body.dataset.page = name;
  PAGES[name].show();
  if (focus) $(`#page-${name} h1`).focus();
}

// --- the API key -----------------------------------------------------------------------------------------------
function askForKey(why) {
  const dialog = $("#key-dialog");
  $("#key-why").textContent = why;
  $("#key-input").value = "";
  if (!dialog.open) dialog.showModal();
  $("#key-input").focus();
}

function showKeyStatus() {
  $("#key-status").hidden = !app.keysRequired;
  $("#key-text").textContent = session.key ? "Key set for this tab" : "No key";
  $("#key-forget").hidden = !session.key;
}

/** What the key may do on the current knowledge base: GET /v1/kb/{name}/rights (kbgraph.serve.explore). A 403 is a
 * knowledge base outside the key's scope: nothing may be done there, and the page says why. */
async function loadRights() {
  app.rightsNote = "";
  try {
    const found = await api(kbPath(app.kb, "/rights"));
    app.rights = { read: found.rights.includes("read"), write: found.rights.includes("write") };
  } catch (err) {
    if (err.status === 403) {
      app.rights = { read: false, write: false };
      app.rightsNote = err.detail;
      notice(`This key may not use the knowledge base ${app.kb}: ${err.detail}`);
    } else app.rights = { read: true, write: null }; // unknown: the API refuses what the key may not do
  }
}

/** Who the tab is to the server: keys or not, a valid key or not, and the knowledge base to open. */
// the page is ready (body[data-ready="true"]) once a connection has finished: with its knowledge base named and the
// key's rights read, so nothing the user types is overwritten by a connection still under way
async function connect() {
  document.body.dataset.ready = "false";
  try {
    return await connecting();
  } finally {
    document.body.dataset.ready = "true";
  }
}

async function connecting() {
  notice("");
  let ready = null;
  try {
    ready = await api("/readyz", { key: false });
    app.keysRequired = false;
  } catch (err) {
    if (err.status === 401) app.keysRequired = true;
    else if (err.status !== 503) {
      notice(`The server did not answer /readyz: ${err.message}`);
    } else notice(`The server is not ready: ${err.message}`);
  }
  if (app.keysRequired) {
    showKeyStatus();
    if (!session.key) {
      askForKey("This server asks for an API key.");
      return false;
    }
    try {
      ready = await api("/readyz");
    } catch (err) {
      if (err.status === 401) return false; // onUnauthorized asked for another key
      if (err.status === 503) notice(`The server is not ready: ${err.message}`);
    }
  }
  showKeyStatus();
  app.kb = session.kb || (ready && ready.kb) || "default";
  $("#kb-name").value = app.kb;
  await loadRights();
  emit("kb", app.kb);
  return true;
}

async function openKb(name) {
  if (!NAME.test(name)) {
    notice("A knowledge base name is letters, digits and _ . - (at most 64).");
    return;
  }
  notice("");
  app.kb = name;
  session.kb = name;
  await loadRights();
  emit("kb", name);
}

async function start() {
  try {
    app.meta = await api("/ui/meta.json", { key: false });
  } catch (err) {
    notice(`The app's own files did not load: ${err.message}`);
  }
  initAsk();
  initWhy();
  initDocuments();
  initExplore();
  window.addEventListener("hashchange", () => route(true));
  $("#skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    $("#main").focus();
  });
  $("#kb-form").addEventListener("submit", (event) => {
    event.preventDefault();
    openKb($("#kb-name").value.trim());
  });
  $("#key-form").addEventListener("submit", () => {
    session.key = $("#key-input").value.trim();
    connect();
  });
  $("#key-dialog").addEventListener("cancel", (event) => {
    if (app.keysRequired && !session.key) event.preventDefault(); // nothing works without one
  });
  $("#key-forget").addEventListener("click", () => {
    session.key = "";
    showKeyStatus();
    askForKey("The key was forgotten: give one to go on.");
  });
  onUnauthorized(() => {
    const had = Boolean(session.key);
    session.key = "";
    app.keysRequired = true;
    showKeyStatus();
    askForKey(had ? "The server refused the key (unknown or revoked): give another." : "This server asks for an API key.");
  });
  route(false);
  await connect();
}

// for the tests and the curious: the app's state (no secret in it: the key stays in sessionStorage)
window.kbgraph = { app, ApiError };
start();
