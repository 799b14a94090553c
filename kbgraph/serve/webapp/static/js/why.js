// The Why page: the last answer's evidence graph, drawn with Cytoscape.js (vendored), question -> the nodes that
// reached each passage (sub-questions of Algorithm 1's rounds, atomic questions, entities, sections, ...) ->
// the passages -> their documents, coloured by label as the Neo4j Browser style does; and each passage's score
// terms (explain: docs/scoring.md) as bars.

import { $, clear, el, shorten } from "./dom.js";
import { graphStyle, loadCytoscape } from "./graph.js";
import { app, events, styleOf } from "./state.js";

/** Column of each label, left to right: the question, what reached the passages, the passages, documents. */
const COLUMN = { Question: 0, SubQuestion: 1, Chunk: 3, Document: 4 };
const EVIDENCE_COLUMN = 2;
const SIZE = { Question: 46, Document: 44, Chunk: 36, SubQuestion: 30 };

let cytoscape = null;
let cy = null;
let drawn = null; // the answer the graph shows

/** A term of the score (a layer name, or a hop such as "entity_hop") -> the node label it came through. */
function labelOfTerm(term) {
  const t = String(term || "");
  for (const label of ["AtomicQuestion", "Entity", "Section", "Triple", "Tag", "Document", "Chunk"]) {
    if (t === label || t.toLowerCase().startsWith(label.toLowerCase())) return label;
  }
  if (/question/i.test(t)) return "AtomicQuestion";
  if (/title/i.test(t)) return "Document";
  if (/next/i.test(t)) return "Chunk";
  return t || "Node";
}

/** {nodes, edges} of the answer's evidence graph (Cytoscape element definitions). */
export function evidenceGraph(answer) {
  const nodes = new Map();
  const edges = new Map();
  const addNode = (id, label, caption, extra = {}) => {
    if (!id) return null;
    if (!nodes.has(id)) {
      const style = styleOf(label);
      nodes.set(id, { data: { id, label, caption: shorten(caption || id, 48), full: caption || id,
        color: style.color, border: style.border, size: SIZE[label] || 26, ...extra } });
    }
    return id;
  };
  const addEdge = (source, target, type, weight = 1) => {
    if (!source || !target || source === target) return;
    const id = `${source}->${target}`;
    if (!edges.has(id)) edges.set(id, { data: { id, source, target, type, weight } });
  };

  const q = addNode("question", "Question", answer.question, { column: 0 });
  const cited = new Set((answer.citations || []).map((c) => c.chunk_id));
  const chunks = new Map();
  (answer.chunks || []).forEach((c, i) => chunks.set(c.id, { ...c, rank: i + 1 }));
  // a cited passage the answer's chunks do not hold (a neighbour picked as evidence) joins its document's node,
  // known by the title and source of the chunks that are held
  const docOf = new Map();
  for (const c of chunks.values()) docOf.set(`${c.document_title}\u0000${c.document_uri || ""}`, c.document_id);
  for (const c of answer.citations || []) {
    if (!chunks.has(c.chunk_id)) {
      const docId = docOf.get(`${c.document_title}\u0000${c.document_uri || ""}`) || `doc-of:${c.chunk_id}`;
      chunks.set(c.chunk_id, { id: c.chunk_id, document_title: c.document_title, document_id: docId,
        section_path: c.section, page: c.page, text: c.quote, breakdown: [] });
    }
  }
  for (const c of chunks.values()) { // the passages first: a term of one may name another (a NEXT hop)
    const n = (answer.citations || []).findIndex((x) => x.chunk_id === c.id) + 1;
    const caption = `${n ? `[${n}] ` : ""}${shorten(c.text || c.summary || c.id, 40)}`;
    addNode(c.id, "Chunk", caption, { cited: cited.has(c.id) ? 1 : 0, full: c.text || c.summary || c.id,
      rank: c.rank || 0, score: c.score });
    const docId = c.document_id || `doc:${c.document_title}`;
    addNode(docId, "Document", c.document_title || docId, { full: c.document_title || docId });
    addEdge(c.id, docId, "IN");
  }
  for (const c of chunks.values()) {
    let direct = !(c.breakdown || []).length;
    for (const term of c.breakdown || []) {
      const label = labelOfTerm(term.term);
      if (label === "Chunk" && (!term.node_id || term.node_id === c.id)) {
        direct = true;
        continue;
      }
      const node = addNode(term.node_id || `${term.term}:${c.id}`, label, term.text || term.node_id || term.term,
        { term: term.term });
      addEdge(q, node, "MATCHED", term.similarity);
      addEdge(node, c.id, term.term, term.score);
    }
    if (direct) addEdge(q, c.id, "SIMILAR", c.score);
  }
  // Algorithm 1 (and HiRAG) rounds: the question -> each round's sub-question -> the atomic question it chose
  // -> its chunk
  for (const step of answer.trace || []) {
    const sub = step.sub_question || (step.selected && step.selected.query) || (step.proposals || [])[0];
    if (!sub && !step.chunk_id) continue;
    const subId = addNode(`round:${step.round}`, "SubQuestion", sub || `round ${step.round}`);
    addEdge(q, subId, "PROPOSED");
    const chunkId = step.chunk_id || (step.selected && step.selected.chunk_id);
    if (step.selected && step.selected.question_id) {
      const aq = addNode(step.selected.question_id, "AtomicQuestion", step.selected.text);
      addEdge(subId, aq, "MATCHED", step.selected.score);
      if (chunkId && nodes.has(chunkId)) addEdge(aq, chunkId, "ATOMIC");
    } else if (chunkId && nodes.has(chunkId)) addEdge(subId, chunkId, "USED");
  }
  return { nodes: [...nodes.values()], edges: [...edges.values()] };
}

/** Positions in columns (preset layout): the question left, documents right, each column centred. */
function layout(nodes) {
  const columns = new Map();
  for (const node of nodes) {
    const col = COLUMN[node.data.label] ?? EVIDENCE_COLUMN;
    if (!columns.has(col)) columns.set(col, []);
    columns.get(col).push(node);
  }
  const order = [...columns.keys()].sort((a, b) => a - b);
  const tallest = Math.max(...[...columns.values()].map((c) => c.length));
  order.forEach((col, x) => {
    const list = columns.get(col);
    if (col === 3) list.sort((a, b) => (a.data.rank || 99) - (b.data.rank || 99));
    const gap = Math.max(58, (tallest * 58) / Math.max(list.length, 1));
    list.forEach((node, y) => {
      node.position = { x: x * 230, y: (y - (list.length - 1) / 2) * Math.min(gap, 140) };
    });
  });
}

/** The base style (graph.js) with the cited passages ringed and the IN edges dashed. */
function whyStyle() {
  return graphStyle(150, {
    nodes: [{ selector: "node[cited = 1]", style: { "border-width": 4, "border-color": "#1d2330" } }],
    edges: [{ selector: "edge[type = 'IN']", style: { "line-style": "dashed" } }],
  });
}

function legend(nodes) {
  const box = clear($("#legend"));
  const labels = [...new Set(nodes.map((n) => n.data.label))];
  for (const label of labels) {
    const style = styleOf(label);
    const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
    swatch.style.backgroundColor = style.color;
    swatch.style.borderColor = style.border;
    const count = nodes.filter((n) => n.data.label === label).length;
    box.append(el("li", {}, swatch, `${label} (${count})`));
  }
}

function describe(nodes) {
  const count = (label) => nodes.filter((n) => n.data.label === label).length;
  const others = nodes.length - count("Question") - count("Chunk") - count("Document");
  $("#graph").setAttribute("aria-label", `Evidence graph: the question, ${count("Chunk")} passages, `
    + `${count("Document")} documents and ${others} other nodes that reached them. The same evidence is listed `
    + "below as score terms.");
}

function showNode(data) {
  const box = clear($("#node-detail"));
  box.append(el("h3", {}, data.label), el("p", {}, data.full || data.caption));
  if (data.score !== undefined) box.append(el("p", { class: "meta" }, `score ${Number(data.score).toFixed(4)}`));
  if (data.term) box.append(el("p", { class: "meta" }, `score term ${data.term}`));
  for (const card of document.querySelectorAll(".term-card.active")) card.classList.remove("active");
  if (data.label === "Chunk") document.querySelector(`.term-card[data-chunk="${CSS.escape(data.id)}"]`)?.classList.add("active");
}

function select(id) {
  if (!cy) return;
  cy.elements().unselect();
  const node = cy.getElementById(id);
  if (node.nonempty()) {
    node.select();
    showNode(node.data());
  }
}

function bars(rows, max) {
  const list = el("dl", { class: "bars" });
  for (const row of rows) {
    const span = el("span");
    span.style.width = `${Math.max(1, (Math.abs(row.value) / (max || 1)) * 100)}%`;
    span.style.backgroundColor = row.value < 0 ? "#b3261e" : styleOf(row.label).color;
    list.append(
      el("dt", { title: row.name }, row.name),
      el("dd", {}, el("div", { class: "bar", role: "presentation" }, span)),
      el("dd", { class: "value" }, row.value.toFixed(3)),
    );
    if (row.via) list.append(el("dd", { class: "via" }, row.via));
  }
  return list;
}

function renderTerms(answer) {
  const list = clear($("#terms"));
  const chunks = answer.chunks || [];
  if (!chunks.length) {
    list.append(el("li", { class: "empty" }, "This answer carries no scored passage (its method retrieves none)."));
    return;
  }
  const max = Math.max(...chunks.flatMap((c) => (c.breakdown || []).map((t) => Math.abs(t.score))), 1e-9);
  chunks.forEach((c, i) => {
    const n = (answer.citations || []).findIndex((x) => x.chunk_id === c.id) + 1;
    const rows = (c.breakdown || []).map((t) => ({
      name: t.term, label: labelOfTerm(t.term), value: t.score,
      via: `${t.text ? `via “${shorten(t.text, 90)}” · ` : ""}similarity ${t.similarity.toFixed(3)} × weight `
        + `${t.weight}${t.factor !== 1 ? ` × factor ${t.factor.toFixed(3)}` : ""}`,
    }));
    const card = el("li", { class: "term-card", dataset: { chunk: c.id } },
      el("h3", {}, el("button", { type: "button", class: "link", onclick: () => select(c.id) },
        `#${i + 1}${n ? ` [${n}]` : ""} ${c.document_title || c.document_id}`),
      " ", el("span", { class: "meta" }, `score ${c.score.toFixed(4)}`)),
      el("p", { class: "meta" }, [c.section_path, c.page ? `page ${c.page}` : ""].filter(Boolean).join(" · ")),
      el("p", { class: "hint" }, shorten(c.text || c.summary || "", 200)),
      rows.length ? bars(rows, max) : el("p", { class: "hint" }, "No score terms (asked without explain)."));
    if ((c.ranking || []).length) {
      const rmax = Math.max(...c.ranking.map((t) => Math.abs(t.contribution)), 1e-9);
      const ranked = [...c.ranking].sort((a, b) => Math.abs(b.contribution) - Math.abs(a.contribution));
      card.append(el("details", { class: "ranker" },
        el("summary", {}, `The ranker's terms (${ranked.length}): what ordered this passage`),
        bars(ranked.map((t) => ({ name: t.feature, label: "Chunk", value: t.contribution,
          via: `feature value ${Number(t.value).toFixed(3)}` })), rmax)));
    }
    list.append(card);
  });
}

async function draw(answer) {
  const { nodes, edges } = evidenceGraph(answer);
  layout(nodes);
  legend(nodes);
  describe(nodes);
  renderTerms(answer);
  if (!cytoscape) cytoscape = await loadCytoscape();
  if (cy) cy.destroy();
  cy = cytoscape({
    container: $("#graph"), elements: { nodes, edges }, style: whyStyle(), layout: { name: "preset", fit: true, padding: 30 },
    wheelSensitivity: 0.3, minZoom: 0.2, maxZoom: 3, boxSelectionEnabled: false, autoungrabify: false,
  });
  cy.on("tap", "node", (event) => showNode(event.target.data()));
  window.kbgraph.cy = cy;
  drawn = answer;
}

export async function showWhy() {
  const answer = app.answer;
  $("#why-empty").hidden = Boolean(answer);
  $("#why-body").hidden = !answer;
  if (!answer) return;
  $("#why-question").textContent = answer.question;
  if (drawn !== answer) await draw(answer);
  else if (cy) {
    cy.resize();
    cy.fit(undefined, 30);
  }
}

export function initWhy() {
  events.addEventListener("answer", () => {
    if (document.body.dataset.page === "why") showWhy();
  });
  events.addEventListener("kb", () => {
    app.answer = null;
    if (cy) cy.destroy();
    cy = null;
    drawn = null;
    if (window.kbgraph) window.kbgraph.cy = null;
  });
}
