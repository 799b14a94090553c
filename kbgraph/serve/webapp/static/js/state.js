// What the pages share: the server's tables (/ui/meta.json), the knowledge base, what the key may do, the last
// answer. Pages listen for "kb" (another knowledge base or key) and "answer" (a new answer).

export const app = {
  meta: { methods: [], default_methods: {}, style: {} },
  kb: "default",
  keysRequired: false,
  /** {read, write}: what GET /v1/kb/{name}/rights says the key may do; write is null while unknown (a 403 then
   * says it). */
  rights: { read: true, write: null },
  rightsNote: "",
  answer: null,
  timing: null,
};

export const events = new EventTarget();

export function emit(name, detail) {
  events.dispatchEvent(new CustomEvent(name, { detail }));
}

/** {color, border, text} of a node label in the Browser style (the base node style for an unknown label). */
export function styleOf(label) {
  const style = app.meta.style || {};
  return { color: "#A5ABB6", border: "#9AA1AC", text: "#FFFFFF", ...(style["*"] || {}), ...(style[label] || {}) };
}
