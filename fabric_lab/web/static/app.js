// AI Fabric Lab web view: the fabric drawing (positions of `fabric-lab show`), live link state
// and utilisation, per-port queues, per-flow throughput (uPlot), controller events, controls.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf"];
const state = { fabric: null, links: {}, ports: {}, charts: null, chartNames: [], selected: null,
                pos: {}, hosts: {} };

function el(tag, attrs, parent) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function drawFabric(fabric) {
  const svg = document.getElementById("fabric");
  const box = svg.getBoundingClientRect();
  const width = Math.max(box.width, 600), height = Math.max(box.height, 300);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const nodes = fabric.switches.concat(fabric.nics);
  const maxX = Math.max(1, ...nodes.map(n => n.x)), maxY = Math.max(1, ...nodes.map(n => n.y));
  const left = 90, right = 30, top = 30, bottom = 40;
  const px = x => left + (x / maxX) * (width - left - right);
  const py = y => top + ((maxY - y) / maxY) * (height - top - bottom);
  for (const n of nodes) state.pos[n.name] = [px(n.x), py(n.y)];
  for (const [y, text] of Object.entries(fabric.rows)) {
    const label = el("text", { x: left - 40, y: py(Number(y)), class: "row-label" }, svg);
    label.textContent = text.split("\n")[0];
  }
  const hosts = el("g", {}, svg);
  for (const host of fabric.hosts) {
    const xs = host.nics.map(n => state.pos[n][0]), y = state.pos[host.nics[0]][1];
    el("rect", { x: Math.min(...xs) - 30, y: y - 13, width: Math.max(...xs) - Math.min(...xs) + 60,
                 height: 26, class: "host" }, hosts);
  }
  const linkLayer = el("g", {}, svg), portLayer = el("g", {}, svg), nodeLayer = el("g", {}, svg);
  const colour = Object.fromEntries(fabric.switches.map(s => [s.name, s.colour]));
  const tier = Object.fromEntries(fabric.switches.map(s => [s.name, s.tier]));
  for (const link of fabric.links) {
    const [xa, ya] = state.pos[link.a], [xb, yb] = state.pos[link.b];
    const upper = (tier[link.a] || 0) >= (tier[link.b] || 0) ? link.a : link.b;
    const line = el("line", { x1: xa, y1: ya, x2: xb, y2: yb, class: "link up", "data-link": link.name,
                              stroke: colour[upper] || "#999", "stroke-width": 1.5 }, linkLayer);
    const title = el("title", {}, line);
    title.textContent = link.name;
    const cross = el("text", { x: (xa + xb) / 2, y: (ya + yb) / 2, class: "cross",
                               "data-cross": link.name, visibility: "hidden" }, linkLayer);
    cross.textContent = "✕";
    const hit = el("line", { x1: xa, y1: ya, x2: xb, y2: yb, class: "hit", "data-hit": link.name }, linkLayer);
    hit.addEventListener("click", () => select(link.name));
    for (const [end, port, far] of [[link.a, link.a_port, link.b], [link.b, link.b_port, link.a]]) {
      if (!(end in colour) || !link.fabric) continue;
      const [x0, y0] = state.pos[end], [x1, y1] = state.pos[far];
      const x = x0 + (x1 - x0) * 0.18, y = y0 + (y1 - y0) * 0.18;
      const dot = el("circle", { cx: x, cy: y, r: 2, class: "port", fill: "#ddd",
                                 "data-port": `${end}:${port}` }, portLayer);
      el("title", {}, dot).textContent = `${end} port ${port} → ${far}`;
      const text = el("text", { x: x + 10, y: y, class: "port-text", "data-port-text": `${end}:${port}` }, portLayer);
      text.textContent = "";
    }
  }
  for (const sw of fabric.switches) {
    const [x, y] = state.pos[sw.name];
    const g = el("g", { class: "switch", "data-switch": sw.name }, nodeLayer);
    const w = Math.max(48, sw.name.length * 6.5 + 10);
    el("rect", { x: x - w / 2, y: y - 11, width: w, height: 22, fill: sw.colour }, g);
    el("text", { x: x, y: y }, g).textContent = sw.name;
  }
  for (const nic of fabric.nics) {
    const [x, y] = state.pos[nic.name];
    const g = el("g", { class: "nic", "data-nic": nic.name }, nodeLayer);
    const w = Math.max(36, nic.name.length * 5.5 + 8);
    el("rect", { x: x - w / 2, y: y - 8, width: w, height: 16 }, g);
    el("text", { x: x, y: y }, g).textContent = nic.name;
  }
  const select_ = document.getElementById("link-select");
  for (const link of fabric.links.filter(l => l.fabric)) {
    const opt = document.createElement("option");
    opt.value = opt.textContent = link.name;
    select_.appendChild(opt);
  }
  select_.addEventListener("change", () => select(select_.value));
  if (select_.value) select(select_.value);
}

function select(name) {
  state.selected = name;
  document.getElementById("link-select").value = name;
  document.querySelectorAll("#fabric .hit").forEach(h => h.classList.toggle("selected", h.dataset.hit === name));
}

function utilColour(util) {
  const u = Math.min(1, util);
  return `hsl(${Math.round(120 - 120 * u)}, 75%, ${u > 0.02 ? 42 : 70}%)`;
}

function updateLinks(links) {
  for (const [name, info] of Object.entries(links)) {
    const line = document.querySelector(`#fabric .link[data-link="${CSS.escape(name)}"]`);
    if (!line) continue;
    line.classList.remove("up", "down", "isolated", "degraded");
    line.classList.add(info.state);
    line.setAttribute("stroke-width", (1.5 + 9 * Math.min(1, info.util)).toFixed(1));
    if (info.ab !== null || info.ba !== null) line.setAttribute("stroke", utilColour(info.util));
    const rates = [info.ab, info.ba].filter(r => r !== null).map(r => r.toFixed(2)).join(" / ");
    line.querySelector("title").textContent =
      `${name}: ${info.state}${info.drop ? ` (dropping ${info.drop}%)` : ""}, ${rates} Mb/s, ` +
      `utilisation ${(100 * info.util).toFixed(0)}%`;
    const cross = document.querySelector(`#fabric [data-cross="${CSS.escape(name)}"]`);
    cross.setAttribute("visibility", info.state === "down" ? "visible" : "hidden");
  }
}

function updatePorts(ports, fabric) {
  const far = {};
  for (const l of fabric.links) { far[`${l.a}:${l.a_port}`] = l.b; far[`${l.b}:${l.b_port}`] = l.a; }
  for (const p of ports) {
    const key = `${p.switch}:${p.port}`;
    const dot = document.querySelector(`#fabric [data-port="${CSS.escape(key)}"]`);
    if (dot) {
      const depth = p.depth || 0;
      dot.setAttribute("r", (2 + Math.min(8, Math.sqrt(depth))).toFixed(1));
      dot.setAttribute("fill", depth ? (depth > 20 ? "#d62728" : "#ff9f43") : "#ddd");
      dot.querySelector("title").textContent =
        `${key} → ${far[key]}: ${p.mbps} Mb/s, queue ${p.depth ?? "n/a"}, ECN ${p.ecn}/s, ` +
        `PFC sent ${p.pfc_tx}/s, received ${p.pfc_rx}/s`;
      const text = document.querySelector(`#fabric [data-port-text="${CSS.escape(key)}"]`);
      const parts = [];
      if (p.ecn) parts.push(`E${Math.round(p.ecn)}`);
      if (p.pfc_tx || p.pfc_rx) parts.push(`P${Math.round(p.pfc_tx + p.pfc_rx)}`);
      text.textContent = parts.join(" ");
    }
  }
  const busiest = ports.slice().sort((a, b) => (b.mbps + b.ecn + b.pfc_tx + (b.depth || 0))
                                             - (a.mbps + a.ecn + a.pfc_tx + (a.depth || 0))).slice(0, 10);
  const body = document.querySelector("#ports tbody");
  body.replaceChildren(...busiest.map(p => {
    const tr = document.createElement("tr");
    for (const v of [p.switch, p.port, far[`${p.switch}:${p.port}`] || "", p.mbps.toFixed(2),
                     p.depth ?? "n/a", p.ecn, p.pfc_tx, p.pfc_rx]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    return tr;
  }));
}

function makeChart(name, i, flows, host) {
  const div = document.createElement("div");
  div.className = "flow-chart";
  div.dataset.flow = name;
  host.appendChild(div);
  const nominal = flows.nominal || 0;
  const opts = {
    width: host.clientWidth / 2 - 12 || 600, height: 110, title: name,
    scales: { x: { time: false }, y: { range: (u, lo, hi) => [0, Math.max(0.1, nominal * 1.4, hi * 1.1)] } },
    axes: [{ size: 24, values: (u, ticks) => ticks.map(v => `${v}s`) }, { size: 40 }],
    series: [{ label: "s" },
             { label: "Mb/s", stroke: PALETTE[i % PALETTE.length], width: 1.3,
               fill: PALETTE[i % PALETTE.length] + "33" },
             { label: "lost", stroke: "#d62728", fill: "#d62728cc", width: 0,
               paths: uPlot.paths.bars({ size: [1, Infinity], align: -1, gap: 0 }), points: { show: false } }],
    legend: { show: false },
    cursor: { show: false },
  };
  return new uPlot(opts, [[], [], []], div);
}

function updateChart(flows) {
  const names = Object.keys(flows.series);
  document.getElementById("flows-what").textContent = flows.what || "per flow";
  const host = document.getElementById("flows-chart");
  if (!state.charts || names.join() !== state.chartNames.join()) {
    host.replaceChildren();
    state.chartNames = names;
    state.charts = names.map((name, i) => makeChart(name, i, flows, host));
  }
  const top = Math.max(0.1, (flows.nominal || 0) * 1.4);
  names.forEach((name, i) => {
    const lost = (flows.lost && flows.lost[name]) || [];
    state.charts[i].setData([flows.t, flows.series[name], flows.t.map((_, k) => lost[k] ? top : null)]);
  });
}

function updateEvents(events) {
  const list = document.getElementById("events");
  const items = events.slice().reverse().filter(e => e.reroute_ms !== null || e.error).map(e => {
    const li = document.createElement("li");
    li.className = e.error ? "error" : (e.up ? "up" : "down");
    const when = new Date(e.t * 1000).toLocaleTimeString([], { hour12: false });
    const what = e.source === "probe"
      ? (e.up ? `probes give ${e.link} back` : `probes isolated ${e.link} (it drops packets)`)
      : `${e.link} ${e.up ? "up" : "down"}`;
    li.textContent = e.error ? `${when} ${what}: rerouting failed: ${e.error}`
                             : `${when} ${what}: rerouted in ${Math.round(e.reroute_ms)} ms`;
    return li;
  });
  if (!items.length) {
    const li = document.createElement("li");
    li.textContent = "(no link event yet)";
    items.push(li);
  }
  list.replaceChildren(...items);
}

function bytesText(n) {
  for (const [unit, size] of [["GB", 2 ** 30], ["MB", 2 ** 20], ["KB", 2 ** 10]]) {
    if (n >= size) return `${(n / size).toFixed(n >= 10 * size ? 0 : 1)} ${unit}`;
  }
  return `${n} B`;
}

function updateJob(job) {
  const panel = document.getElementById("job-panel");
  panel.hidden = !job;  // only while `fabric-lab train --web` runs a job
  if (!job) return;
  document.getElementById("job-name").textContent = job.name;
  document.getElementById("job-iteration").textContent =
    `${job.status}: iteration ${Math.min(job.iteration + 1, job.iterations)} of ${job.iterations}, ${job.done} done`;
  const last = job.last;
  document.getElementById("job-last").textContent = last
    ? `last iteration (${last.iteration + 1}): ${last.total_s.toFixed(3)} s = compute ${last.compute_s.toFixed(3)} s` +
      ` + exposed communication ${last.exposed_s.toFixed(3)} s; slowest rank ${last.slowest_rank}` +
      ` (${last.slowest_nic}, ${last.slowest_s.toFixed(3)} s, fastest ${last.fastest_s.toFixed(3)} s)`
    : "no iteration finished yet (times in the modelled job's seconds)";
  const c = job.collective, line = document.getElementById("job-collective");
  line.classList.toggle("in-flight", Boolean(c && c.in_flight));
  line.textContent = !c ? "no collective yet" : c.in_flight
    ? `in flight: ${c.purpose} (${c.kind}, ${c.algorithm}, ${bytesText(c.bytes)} per rank), ` +
      `step ${Math.min(c.step + 1, c.steps)} of ${c.steps}${c.phase ? `, ${c.phase}` : ""}`
    : `last: ${c.purpose} (${c.kind}, ${c.algorithm}, ${bytesText(c.bytes)} per rank), ` +
      `${c.steps} steps in ${(1000 * c.time_s).toFixed(1)} ms, busbw ${c.busbw_gbs.toFixed(1)} GB/s` +
      `${c.complete ? "" : ", INCOMPLETE"}${c.wrong ? `, ${c.wrong} wrong` : ""}`;
  const body = document.querySelector("#job-ranks tbody");
  body.replaceChildren(...job.ranks.map(r => {
    const tr = document.createElement("tr");
    if (last && last.slowest_rank === r.rank) tr.className = "slowest";
    for (const v of [r.rank, r.nic, bytesText(r.bytes), bytesText(r.bytes_total),
                     `${r.steps} / ${r.steps_total}`, `${(1000 * r.last_end_s).toFixed(1)} ms`]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    const td = document.createElement("td"), bar = document.createElement("progress");
    bar.max = Math.max(1, r.bytes_total);
    bar.value = Math.min(r.bytes, bar.max);
    td.appendChild(bar);
    tr.appendChild(td);
    return tr;
  }));
}

function updateInt(section) {
  const panel = document.getElementById("int-panel");
  panel.hidden = !section;  // only where the view can send probes (`fabric-lab up --web`)
  if (!section) return;
  for (const id of ["int-src", "int-dst"]) {
    const sel = document.getElementById(id);
    if (sel.options.length) continue;
    for (const nic of section.nics) {
      const opt = document.createElement("option");
      opt.value = opt.textContent = nic;
      sel.appendChild(opt);
    }
    if (id === "int-dst" && section.nics.length > 1) sel.value = section.nics[section.nics.length - 1];
  }
  const d = section.diagnosis, named = d && d.named ? d.named : null;
  document.querySelectorAll("#fabric .link").forEach(line =>
    line.classList.toggle("named", !!named && line.dataset.link === named.link_name));
  document.getElementById("int-diagnosis").textContent = !d ? ""
    : named ? `diagnose named ${named.link} (${named.symptom}, score ${named.score}): ${named.text}`
    : `diagnose: no bad link found (${d.arrived} of ${d.sent} probes arrived)`;
  const f = section.flow;
  document.getElementById("int-flow").textContent = !f ? "no flow traced yet"
    : `${f.src} → ${f.dst} (UDP source port ${f.sport}): ${f.arrived} of ${f.sent} probes arrived`;
  const body = document.querySelector("#int-hops tbody");
  body.replaceChildren(...(f ? f.hops : []).map((h, i) => {
    const tr = document.createElement("tr");
    tr.classList.toggle("named", !!named && named.link_name === h.link);
    for (const v of [i + 1, h.switch, h.ingress_port, h.egress_port, h.link, h.link_mbps, h.qdepth,
                     h.hop_latency_us, `${h.qdepth_max} / ${h.hop_latency_max_us}`]) {
      const td = document.createElement("td");
      td.textContent = String(v);
      tr.appendChild(td);
    }
    return tr;
  }));
}

function onState(s) {
  const status = document.getElementById("status");
  status.textContent = s.status || "running";
  status.classList.toggle("failed", /FAILURE|down/.test(s.status || ""));
  document.getElementById("meta").textContent =
    `${s.target}, ${s.mode || "?"} mode` + (s.errors.length ? `, last error: ${s.errors[s.errors.length - 1]}` : "");
  if (s.mode && s.mode !== state.mode) document.getElementById("lb-mode").value = s.mode;
  state.mode = s.mode;
  updateLinks(s.links);
  updatePorts(s.ports, state.fabric);
  updateChart(s.flows);
  updateEvents(s.events);
  updateJob(s.job);
  updateInt(s.int);
  document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
}

async function act(body) {
  const result = document.getElementById("action-result");
  result.classList.remove("error");
  result.textContent = "…";
  try {
    const response = await fetch("/api/action", {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body) });
    const answer = await response.json();
    result.textContent = answer.message;
    result.classList.toggle("error", !answer.ok);
  } catch (err) {
    result.textContent = String(err);
    result.classList.add("error");
  }
}

async function main() {
  // the token came in the URL; the server's cookie carries it from here on (off the address bar)
  if (new URLSearchParams(location.search).has("token")) history.replaceState(null, "", location.pathname);
  state.fabric = await (await fetch("/api/fabric")).json();
  drawFabric(state.fabric);
  document.getElementById("btn-fail").addEventListener("click", () => act({ action: "fail", link: state.selected }));
  document.getElementById("btn-restore").addEventListener("click", () => act({ action: "restore", link: state.selected }));
  document.getElementById("btn-degrade").addEventListener("click", () => act({
    action: "degrade", link: state.selected, percent: Number(document.getElementById("drop-percent").value) }));
  document.getElementById("btn-lb").addEventListener("click", () => act({
    action: "lb", mode: document.getElementById("lb-mode").value }));
  document.getElementById("btn-int").addEventListener("click", () => act({
    action: "int", src: document.getElementById("int-src").value,
    dst: document.getElementById("int-dst").value }));
  document.getElementById("btn-diagnose").addEventListener("click", () => act({ action: "diagnose" }));
  const stream = new EventSource("/api/stream");
  stream.onmessage = msg => {
    try {
      onState(JSON.parse(msg.data));
    } catch (err) {
      document.getElementById("status").textContent = `the page failed: ${err}`;
      document.body.dataset.error = String(err);
    }
  };
  stream.onerror = () => { document.getElementById("status").textContent = "disconnected (the fabric stopped?)"; };
  document.body.dataset.ready = "1";
}

main().catch(err => {
  document.getElementById("status").textContent = `the page failed: ${err}`;
  document.body.dataset.error = String(err);
});
