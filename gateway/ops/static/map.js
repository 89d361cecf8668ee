// The interactive map: workspace layers on MapLibre GL JS, drawn from the gateway's /maps/layer and /tiles routes.
// One page for three places: the MCP App a host shows beside map_image (layers from the host bridge), /maps/view
// (layers in the query) and a call's page on /ops (its outputs). Nothing is fetched from anywhere but the gateway.
import * as maplibregl from "./vendor/maplibre-gl.mjs";

const STYLE = {
  version: 8,
  sources: {},
  layers: [{ id: "background", type: "background", paint: { "background-color": "#eef0f2" } }],
};
const COLOURS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
const POLYGONS = ["in", ["geometry-type"], ["literal", ["Polygon", "MultiPolygon"]]];
const LINES = ["in", ["geometry-type"], ["literal", ["LineString", "MultiLineString"]]];
const POINTS = ["in", ["geometry-type"], ["literal", ["Point", "MultiPoint"]]];
const PROTOCOL = "2026-01-26";

function gateway(el) {
  return (el.dataset.gateway || window.location.origin).replace(/\/$/, "");
}

const APP_META = "io.geogate/map";
const TICKET = "X-Geogate-Map-Ticket";

function credentials(ticket) {
  if (ticket) return { [TICKET]: ticket };
  const token = new URLSearchParams(window.location.hash.slice(1)).get("token");
  return token ? { Authorization: `Bearer ${token}` } : {};
}

function tileUrl(base, layer) {
  const query = new URLSearchParams({ path: layer.path });
  if (layer.bands >= 3) {
    query.set("bands", "1,2,3");
  } else {
    query.set("bands", "1");
    query.set("colormap", "viridis");
  }
  if (layer.rescale) query.set("rescale", layer.rescale.join(","));
  return `${base}/tiles/{z}/{x}/{y}.png?${query}`;
}

function addRaster(map, id, base, layer) {
  map.addSource(id, { type: "raster", tileSize: 256, tiles: [tileUrl(base, layer)], bounds: layer.bounds });
  map.addLayer({ id, type: "raster", source: id, paint: { "raster-opacity": 1 } });
  return [{ id, property: "raster-opacity", scale: 1 }];
}

function addVector(map, id, layer, colour) {
  map.addSource(id, { type: "geojson", data: layer.geojson });
  map.addLayer({ id: `${id}-fill`, type: "fill", source: id, filter: POLYGONS, paint: { "fill-color": colour, "fill-opacity": 0.5 } });
  map.addLayer({ id: `${id}-line`, type: "line", source: id, filter: ["any", POLYGONS, LINES], paint: { "line-color": colour, "line-width": 2 } });
  map.addLayer({ id: `${id}-point`, type: "circle", source: id, filter: POINTS, paint: { "circle-color": colour, "circle-radius": 6, "circle-stroke-color": "#ffffff", "circle-stroke-width": 1.5 } });
  return [
    { id: `${id}-fill`, property: "fill-opacity", scale: 0.5 },
    { id: `${id}-line`, property: "line-opacity", scale: 1 },
    { id: `${id}-point`, property: "circle-opacity", scale: 1 },
  ];
}

function row(list, entry) {
  const item = document.createElement("li");
  item.dataset.path = entry.path;
  const name = document.createElement("label");
  const shown = document.createElement("input");
  shown.type = "checkbox";
  shown.checked = true;
  name.append(shown, ` ${entry.layer || entry.path.split("/").pop()}`);
  const opacity = document.createElement("input");
  Object.assign(opacity, { type: "range", min: "0", max: "100", value: "100", title: "opacity" });
  item.append(name, opacity);
  list.append(item);
  return { item, shown, opacity };
}

function bind(map, controls, styled) {
  controls.shown.addEventListener("change", () => {
    for (const s of styled) map.setLayoutProperty(s.id, "visibility", controls.shown.checked ? "visible" : "none");
  });
  controls.opacity.addEventListener("input", () => {
    for (const s of styled) map.setPaintProperty(s.id, s.property, (s.scale * controls.opacity.value) / 100);
  });
}

async function fetchLayer(base, entry, headers) {
  const query = new URLSearchParams({ path: entry.path, ...(entry.layer ? { layer: entry.layer } : {}) });
  const response = await fetch(`${base}/maps/layer?${query}`, { headers });
  const body = await response.json();
  if (!response.ok) throw new Error(`${body.error.code}: ${body.error.message}`);
  return body;
}

function popup(map, vectorIds) {
  map.on("click", (event) => {
    const ids = vectorIds.filter((id) => map.getLayer(id));
    const [feature] = map.queryRenderedFeatures(event.point, { layers: ids });
    if (!feature) return;
    const table = document.createElement("table");
    const entries = Object.entries({ id: feature.id, ...feature.properties }).filter(([, v]) => v !== undefined);
    for (const [key, value] of entries) {
      const tr = table.insertRow();
      tr.insertCell().textContent = key;
      tr.insertCell().textContent = typeof value === "object" ? JSON.stringify(value) : String(value);
    }
    new maplibregl.Popup({ maxWidth: "320px" }).setLngLat(event.lngLat).setDOMContent(table).addTo(map);
  });
}

function show(map, base, controls, result, index) {
  if (result.status === "rejected") {
    controls.item.dataset.error = result.reason.message;
    controls.item.title = result.reason.message;
    return null;
  }
  const layer = result.value;
  const id = `layer-${index}`;
  controls.item.dataset.kind = layer.kind;
  const colour = COLOURS[index % COLOURS.length];
  const styled = layer.kind === "raster" ? addRaster(map, id, base, layer) : addVector(map, id, layer, colour);
  bind(map, controls, styled);
  return { kind: layer.kind, bounds: layer.bounds, styled };
}

function union(boxes) {
  return boxes.reduce((a, b) => [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[2], b[2]), Math.max(a[3], b[3])]);
}

/** Draw `layers` (workspace paths, or {path, layer}; the first at the bottom) on a map in `el`, a layer list in
 * `list`; `ticket` is the read ticket of a map_image result when the gateway asks for authentication. */
export async function mount(el, list, layers, ticket) {
  const base = gateway(el);
  const headers = credentials(ticket);
  const entries = layers.map((layer) => (typeof layer === "string" ? { path: layer } : layer));
  const map = new maplibregl.Map({
    container: el,
    style: STYLE,
    center: [0, 0],
    zoom: 1,
    attributionControl: false,
    transformRequest: (url) => (url.startsWith(base) ? { url, headers } : { url }),
  });
  window.geogateMap = map;
  await map.once("load");
  const found = await Promise.allSettled(entries.map((entry) => fetchLayer(base, entry, headers)));
  const shown = found.map((result, index) => show(map, base, row(list, entries[index]), result, index));
  const boxes = shown.filter(Boolean).map((s) => s.bounds);
  const vectorIds = shown.filter((s) => s?.kind === "vector").flatMap((s) => s.styled.map((part) => part.id));
  popup(map, vectorIds);
  if (boxes.length) map.fitBounds(union(boxes), { padding: 24, animate: false, maxZoom: 18 });
  el.dataset.state = "ready";
  return map;
}

function drawnBy(result) {
  const said = result?._meta?.[APP_META];
  return { layers: Array.isArray(said?.layers) ? said.layers : [], ticket: said?.ticket };
}

/** Talk to an MCP Apps host (SEP-1865): initialise, then draw the layers the result of the call it shows names. */
export function bridge(onLayers) {
  const pending = new Map();
  let next = 0;
  let drawn = false;
  const send = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
  window.addEventListener("message", (event) => {
    const message = event.data;
    if (event.source !== window.parent || message?.jsonrpc !== "2.0") return;
    if (message.id !== undefined && pending.has(message.id) && !message.method) {
      pending.get(message.id)(message);
      pending.delete(message.id);
    } else if (message.method === "ui/notifications/tool-result" && !drawn) {
      drawn = true;
      onLayers(drawnBy(message.params));
    } else if (message.method === "ui/resource-teardown") {
      send({ id: message.id, result: {} });
    }
  });
  const id = ++next;
  pending.set(id, () => send({ method: "ui/notifications/initialized", params: {} }));
  const appInfo = { name: "geogate-map", version: "1.0.0" };
  send({ id, method: "ui/initialize", params: { protocolVersion: PROTOCOL, appInfo, appCapabilities: {} } });
  return send;
}

function start() {
  const el = document.getElementById("map");
  const list = document.getElementById("map-layers");
  if (!el || !list) return;
  const paths = JSON.parse(el.dataset.layers || "[]");
  if (paths.length || window.parent === window) {
    mount(el, list, paths);
    return;
  }
  const send = bridge(async ({ layers, ticket }) => {
    await mount(el, list, layers, ticket);
    send({ method: "ui/notifications/size-changed", params: { width: document.body.scrollWidth, height: document.body.scrollHeight } });
  });
}

start();
