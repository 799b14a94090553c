// The Explore page: find a document or an entity by name (GET /explore/search), draw it with Cytoscape.js, expand a
// node's neighbours on click one page at a time (GET /explore/nodes/{id}: at most PAGE per expansion, the rest
// behind an "N more" node), its properties in the panel, and the `kbgraph browse` queries as named views (GET
// /explore/views/{view}). Nodes coloured by label as the Neo4j Browser style does (the palette of the Why page).
// The panel lists the selected node's neighbours as buttons: the graph is walked with the keyboard too.

import { api, kbPath } from "./api.js";
import { $, clear, el, shorten } from "./dom.js";
import { graphStyle, loadCytoscape } from "./graph.js";
import { app, events, styleOf } from "./state.js";

/** Neighbours per expansion. */
export const PAGE = 12;
const SIZE = { Document: 44, Entity: 34, Chunk: 32, Section: 30, IngestionRun: 40 };
const MORE = "More";

let cytoscape = null;
let cy = null;
/** id -> {total, next (the skip of the next page), more} of each node expanded so far. */
const expanded = new Map();
/** id -> the GraphNode (label, caption, properties) of each node drawn. */
const known = new Map();
let selected = null;

function status(text) {
  $("#explore-status").textContent = text;
}

function nodeData(node) {
  const style = styleOf(node.label);
  return { id: node.id, label: node.label, caption: shorten(node.caption || node.id, 40), color: style.color,
    border: style.border, size: SIZE[node.label] || 26 };
}

/** The base style (graph.js) with the "N more" node, edge labels and dashed drawn-only edges. */
function exploreStyle() {
  return graphStyle(140, { nodes: [
    { selector: `node[label = '${MORE}']`, style: {
      "background-color": "#ffffff", "border-color": "#4f586a", "border-style": "dashed", shape: "round-rectangle",
      width: 70, height: 22, "text-valign": "center", "text-margin-y": 0, "font-weight": "bold",
    } },
  ], edges: [
    { selector: "edge", style: {
      label: "data(type)", "font-size": 7, color: "#4f586a", "text-rotation": "autorotate",
      "text-background-color": "#ffffff", "text-background-opacity": 0.8,
    } },
    { selector: "edge[type = 'IN'], edge[type = 'CHANGED'], edge[type = 'more']", style: { "line-style": "dashed" } },
  ] });
}

async function ensureGraph() {
  if (!cytoscape) cytoscape = await loadCytoscape();
  if (cy) return cy;
  cy = cytoscape({
    container: $("#explore-graph"), elements: [], style: exploreStyle(), wheelSensitivity: 0.3, minZoom: 0.15,
    maxZoom: 3, boxSelectionEnabled: false,
  });
  cy.on("tap", "node", (event) => tapped(event.target.id()));
  window.kbgraph.explore = cy;
  return cy;
}

function reset() {
  if (cy) cy.elements().remove();
  expanded.clear();
  known.clear();
  selected = null;
  showPanel(null);
}

function addNode(node, position) {
  known.set(node.id, node);
  if (cy.getElementById(node.id).nonempty()) return false;
  cy.add({ group: "nodes", data: nodeData(node), position: position || { x: 0, y: 0 } });
  return true;
}

function addEdge(edge) {
  const id = `${edge.source}-${edge.type}->${edge.target}`;
  if (cy.getElementById(id).nonempty() || cy.getElementById(edge.source).empty()
      || cy.getElementById(edge.target).empty()) return;
  cy.add({ group: "edges", data: { id, source: edge.source, target: edge.target, type: edge.type } });
}

/** The ring of an expansion's `round`-th page of `count` new nodes: each page one ring further out. */
function radius(count, round = 0) {
  return 110 + count * 9 + round * 85;
}

/** New neighbours on a ring around their node (a stable place, unlike a layout of the whole graph). */
function ring(center, count, turn, round) {
  const r = radius(count, round);
  return (i) => {
    const angle = turn + (2 * Math.PI * i) / Math.max(count, 1);
    return { x: center.x + r * Math.cos(angle), y: center.y + r * Math.sin(angle) };
  };
}

function legend() {
  const box = clear($("#explore-legend"));
  const labels = new Map();
  for (const node of known.values()) labels.set(node.label, (labels.get(node.label) || 0) + 1);
  for (const [label, count] of labels) {
    const style = styleOf(label);
    const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
    swatch.style.backgroundColor = style.color;
    swatch.style.borderColor = style.border;
    box.append(el("li", {}, swatch, `${label} (${count})`));
  }
  const parts = [...labels].map(([label, count]) => `${count} ${label}`).join(", ");
  $("#explore-graph").setAttribute("aria-label", parts ? `The graph: ${parts}. The selected node's neighbours are `
    + "listed beside it." : "The graph: find a node or show a view");
}

function moreId(id) {
  return `more:${id}`;
}

/** One more page of the neighbours of `id` (the first on its first expansion). */
export async function expand(id) {
  const state = expanded.get(id) || { total: null, next: 0, more: null };
  if (state.more === 0) return;
  status(`Expanding ${shorten(known.get(id)?.caption || id, 50)}…`);
  let page;
  try {
    page = await api(`${kbPath(app.kb, `/explore/nodes/${encodeURIComponent(id)}`)}?skip=${state.next}&limit=${PAGE}`);
  } catch (err) {
    status(`The neighbours could not be read: ${err.message}`);
    return;
  }
  known.set(id, page.node);
  const center = cy.getElementById(id).position();
  const fresh = page.neighbours.filter((n) => cy.getElementById(n.id).empty());
  const round = Math.floor(state.next / PAGE);
  const place = ring(center, fresh.length, (expanded.size % 6) * 0.5 + round * (Math.PI / Math.max(fresh.length, 1)),
    round);
  fresh.forEach((n, i) => addNode(n, place(i)));
  page.neighbours.forEach((n) => known.set(n.id, n));
  page.edges.forEach(addEdge);
  cy.remove(cy.getElementById(moreId(id)));
  expanded.set(id, { total: page.total, next: page.skip + page.limit, more: page.more });
  if (page.more > 0) {
    cy.add({ group: "nodes", data: { id: moreId(id), label: MORE, of: id, caption: `${page.more} more`,
      color: "#ffffff", border: "#4f586a", size: 22 },
      position: { x: center.x, y: center.y - (fresh.length ? radius(fresh.length, round) + 45 : 70) } });
    cy.add({ group: "edges", data: { id: `${moreId(id)}-e`, source: id, target: moreId(id), type: "more" } });
  }
  legend();
  status(`${known.get(id).caption}: ${page.total} neighbour${page.total === 1 ? "" : "s"}, `
    + `${page.total - page.more} shown${page.more ? `, ${page.more} more` : ""}.`);
  cy.animate({ fit: { eles: cy.elements(), padding: 30 } }, { duration: 150 });
  if (selected === id) showPanel(id);
}

async function tapped(id) {
  const node = cy.getElementById(id);
  if (node.data("label") === MORE) {
    await expand(node.data("of"));
    return;
  }
  select(id);
  if (!expanded.has(id)) await expand(id);
}

function select(id) {
  cy.elements().unselect();
  const node = cy.getElementById(id);
  if (node.nonempty()) node.select();
  selected = id;
  showPanel(id);
}

function value(v) {
  if (Array.isArray(v)) return v.map((x) => (typeof x === "object" ? JSON.stringify(x) : String(x))).join(", ");
  if (v && typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function neighbourList(id) {
  const list = el("ul", { class: "neighbours", "aria-label": "Neighbours drawn" });
  for (const other of cy.getElementById(id).neighborhood("node").toArray()) {
    const data = other.data();
    if (data.label === MORE) continue;
    list.append(el("li", {}, el("button", { type: "button", class: "link", onclick: () => tapped(data.id) },
      `${data.label}: ${shorten(known.get(data.id)?.caption || data.id, 60)}`)));
  }
  return list;
}

function showPanel(id) {
  const box = clear($("#explore-detail"));
  const node = id && known.get(id);
  if (!node) {
    box.append(el("p", { class: "hint" }, "Select a node to see its properties and expand its neighbours."));
    return;
  }
  const state = expanded.get(id);
  box.append(el("h3", {}, node.label), el("p", { class: "caption" }, node.caption));
  const actions = el("p", { class: "actions" });
  if (!state || state.more > 0) {
    actions.append(el("button", { type: "button", class: "secondary", id: "expand-button", onclick: () => expand(id) },
      state ? `Show ${Math.min(state.more, PAGE)} more of ${state.more}` : "Expand neighbours"));
  } else actions.append(el("span", { class: "meta" }, `All ${state.total} neighbours shown`));
  box.append(actions);
  const props = el("dl", { class: "props" });
  for (const [key, v] of Object.entries(node.properties || {})) {
    const long = key === "text"; // scrolls: focusable, so the keyboard reaches all of it
    props.append(el("dt", {}, key), el("dd", long ? { class: "long", tabindex: "0" } : {}, value(v)));
  }
  box.append(props);
  if (state) box.append(el("h4", {}, "Neighbours"), neighbourList(id));
}

/** Draw one node alone (a search hit), select it and expand it. */
async function open(node) {
  await ensureGraph();
  reset();
  addNode(node, { x: 0, y: 0 });
  legend();
  select(node.id);
  await expand(node.id);
}

function hitButton(node) {
  const what = node.label === "Entity" && node.properties.type ? ` (${node.properties.type})` : "";
  return el("li", {}, el("button", { type: "button", class: "hit", onclick: () => open(node) },
    el("span", { class: "label" }, node.label), `${node.caption}${what}`));
}

async function find(text) {
  status(`Finding “${shorten(text, 60)}”…`);
  const list = clear($("#hits"));
  try {
    const hits = await api(`${kbPath(app.kb, "/explore/search")}?q=${encodeURIComponent(text)}&limit=10`);
    const all = [...hits.entities, ...hits.documents];
    $("#hits-box").hidden = false;
    if (!all.length) list.append(el("li", { class: "empty" }, "Nothing of that name."));
    for (const node of all) list.append(hitButton(node));
    status(`${hits.entities.length} entit${hits.entities.length === 1 ? "y" : "ies"} and ${hits.documents.length} `
      + `document${hits.documents.length === 1 ? "" : "s"} found: choose one to draw it.`);
  } catch (err) {
    status(`The search failed: ${err.message}`);
  }
}

function viewParams() {
  const view = (app.meta.views || []).find((v) => v.name === $("#view").value);
  const box = clear($("#view-params"));
  $("#view-title").textContent = view ? view.title : "";
  for (const p of (view && view.params) || []) {
    const id = `view-${p.name}`;
    box.append(el("label", { for: id, class: "param" }, p.name.replace("_", " ")),
      el("input", { id, name: p.name, type: typeof p.default === "number" ? "number" : "text", title: p.help,
        value: String(p.default), min: typeof p.default === "number" ? 0 : undefined, class: "param-input",
        placeholder: p.default === "" ? "(default)" : undefined }));
  }
}

async function showView() {
  const name = $("#view").value;
  const query = new URLSearchParams();
  for (const input of $("#view-params").querySelectorAll("input")) {
    if (input.value !== "") query.set(input.name, input.value);
  }
  status(`Showing ${name}…`);
  try {
    const graph = await api(`${kbPath(app.kb, `/explore/views/${encodeURIComponent(name)}`)}?${query}`);
    await ensureGraph();
    reset();
    graph.nodes.forEach((n) => addNode(n));
    graph.edges.forEach(addEdge);
    const layout = graph.edges.length ? { name: "cose", animate: false, padding: 30, nodeRepulsion: () => 9000 }
      : { name: "grid", padding: 30, avoidOverlap: true };
    cy.layout(layout).run();
    cy.fit(undefined, 30);
    legend();
    status(`${graph.title}: ${graph.nodes.length} node${graph.nodes.length === 1 ? "" : "s"}, `
      + `${graph.edges.length} relationship${graph.edges.length === 1 ? "" : "s"} (${graph.rows} row`
      + `${graph.rows === 1 ? "" : "s"}).`);
    if (graph.nodes.length) select(graph.nodes[0].id);
  } catch (err) {
    status(`The view could not be shown: ${err.message}`);
  }
}

export function showExplore() {
  if (cy) {
    cy.resize();
    if (cy.elements().length) cy.fit(undefined, 30);
  }
}

export function initExplore() {
  const picker = $("#view");
  for (const view of app.meta.views || []) picker.append(el("option", { value: view.name }, view.name.replace("_", " ")));
  picker.addEventListener("change", viewParams);
  viewParams();
  $("#find-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = $("#find").value.trim();
    if (text) find(text);
  });
  $("#view-form").addEventListener("submit", (event) => {
    event.preventDefault();
    showView();
  });
  events.addEventListener("kb", () => {
    reset();
    clear($("#hits"));
    $("#hits-box").hidden = true;
    status("");
    legend();
  });
}
