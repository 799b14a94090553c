// What the Why and Explore pages' graphs share: Cytoscape.js (vendored, loaded on first use) and the base style of
// their nodes and edges (colours by label from the Browser style, set per node as data(color) / data(border)).

const CYTOSCAPE = "/ui/vendor/cytoscape/cytoscape.esm.min.mjs";
let loaded = null;

/** The Cytoscape.js module's default export (one import for both pages). */
export async function loadCytoscape() {
  if (!loaded) loaded = import(CYTOSCAPE).then((module) => module.default);
  return loaded;
}

/**
 * The base style: nodes coloured and sized by their data, captions under them wrapped at `textMaxWidth` pixels,
 * the selected node ringed, edges grey with an arrow. A page's own rules: `nodes` after the base node rule and
 * before the selected one (which wins over them), `edges` after the base edge rule.
 */
export function graphStyle(textMaxWidth, { nodes = [], edges = [] } = {}) {
  return [
    { selector: "node", style: {
      "background-color": "data(color)", "border-color": "data(border)", "border-width": 2,
      width: "data(size)", height: "data(size)", label: "data(caption)", "font-size": 10, color: "#1d2330",
      "text-valign": "bottom", "text-margin-y": 4, "text-wrap": "wrap", "text-max-width": textMaxWidth,
      "text-background-color": "#ffffff", "text-background-opacity": 0.85, "text-background-padding": 1,
    } },
    ...nodes,
    { selector: "node:selected", style: { "border-width": 5, "border-color": "#ffb020", "overlay-opacity": 0 } },
    { selector: "edge", style: {
      width: 1.5, "line-color": "#aab2c0", "target-arrow-color": "#aab2c0", "target-arrow-shape": "triangle",
      "curve-style": "bezier", "arrow-scale": 0.8,
    } },
    ...edges,
  ];
}
