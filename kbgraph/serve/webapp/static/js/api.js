// The JSON API of this page's own origin (kbgraph serve's /v1 routes, docs/serve.md). Every request goes through
// `api()`: a path on this origin only (never a URL), the tab's API key as `Authorization: Bearer`, no cookies.

const KEY_ITEM = "kbgraph.key";
const KB_ITEM = "kbgraph.kb";

export const session = {
  get key() { return sessionStorage.getItem(KEY_ITEM) || ""; },
  set key(value) { value ? sessionStorage.setItem(KEY_ITEM, value) : sessionStorage.removeItem(KEY_ITEM); },
  get kb() { return sessionStorage.getItem(KB_ITEM) || ""; },
  set kb(value) { sessionStorage.setItem(KB_ITEM, value); },
};

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.detail = detail || "";
  }
}

const listeners = { unauthorized: [] };
/** Called with the error when the server answers 401 (no key, or a key it refuses). */
export function onUnauthorized(fn) { listeners.unauthorized.push(fn); }

/**
 * One request to this origin. `path` must be an absolute path ("/v1/..."): anything else is refused before a
 * request is made. Options: method, json (a body sent as application/json), form (a FormData, multipart),
 * accept, signal, key (false: send no key, and a 401 is only the caller's: no key is asked for). Resolves to the parsed JSON, or to the Response itself for
 * `accept: "text/event-stream"`, or to a Blob for `accept: "image/..."`; rejects with an ApiError carrying the server's `detail`.
 */
export async function api(path, { method = "GET", json, form, accept = "application/json", signal, key = true } = {}) {
  if (typeof path !== "string" || !path.startsWith("/") || path.startsWith("//")) {
    throw new ApiError(0, `refused to call ${String(path).slice(0, 80)}: only this server's own API is called`);
  }
  const headers = { Accept: accept };
  if (key && session.key) headers.Authorization = `Bearer ${session.key}`;
  let body;
  if (json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  } else if (form !== undefined) {
    body = form; // the browser writes the multipart boundary
  }
  let response;
  try {
    response = await fetch(path, {
      method, headers, body, signal, credentials: "omit", cache: "no-store", redirect: "error",
      referrerPolicy: "no-referrer", mode: "same-origin",
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, `the server did not answer (${err.message})`);
  }
  if (!response.ok) {
    let detail = response.statusText;
    try {
      const data = await response.json();
      detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail);
    } catch { /* not JSON */ }
    const error = new ApiError(response.status, detail);
    if (response.status === 401 && key) listeners.unauthorized.forEach((fn) => fn(error));
    throw error;
  }
  if (accept === "text/event-stream") return response;
  if (accept.startsWith("image/")) return response.blob();
  if (response.status === 204) return null;
  return response.json();
}

/** The path of a route of the current knowledge base: kbPath("/ask") -> /v1/kb/<name>/ask. */
export function kbPath(kb, rest) {
  return `/v1/kb/${encodeURIComponent(kb)}${rest}`;
}

/** The Server-Sent Events of a streamed response, as {event, data} with `data` parsed from its JSON line. */
export async function* sse(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      let cut;
      while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
        let event = "message";
        const data = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (!data.length) continue;
        let parsed;
        try { parsed = JSON.parse(data.join("\n")); } catch { parsed = data.join("\n"); }
        yield { event, data: parsed };
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}
