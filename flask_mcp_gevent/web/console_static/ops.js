// The operations tab: scrape /metrics (Prometheus text) every few seconds while the tab is shown, and turn
// two scrapes into sessions, open streams, requests and tool calls per second, and tool call latency.
// When /metrics is refused or missing (a proxy may restrict it), the tab says so and shows nothing else.

const SCRAPE_INTERVAL_MS = 2000;
const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
// Where this server serves /metrics (the page names it: a host app mounts it under its MCP path).
const metricsPath = () => document.querySelector('meta[name="mcp-metrics"]')?.content ?? "/metrics";

// Parse Prometheus text exposition into [{name, labels, value}] (comments and blank lines skipped).
export function parsePrometheus(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = SAMPLE_LINE.exec(line);
    if (!match) continue;
    const labels = {};
    for (const [, name, value] of (match[2] || "").matchAll(LABEL)) labels[name] = value.replace(/\\(.)/g, "$1");
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

// Sum the samples named name whose labels include every label in where.
export function total(samples, name, where = {}) {
  return samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

// The smallest bucket bound holding the q-quantile of the calls between two scrapes.
function quantile(before, after, q) {
  const buckets = after
    .filter((s) => s.name === "mcp_tool_call_duration_seconds_bucket")
    .map((s) => ({ le: Number(s.labels.le === "+Inf" ? Infinity : s.labels.le), count: s.value -
      total(before, s.name, { le: s.labels.le }) }))
    .sort((a, b) => a.le - b.le);
  const calls = buckets.length ? buckets[buckets.length - 1].count : 0;
  const bound = buckets.find((b) => b.count >= q * calls);
  return calls && bound ? bound.le : null;
}

// What two scrapes dt seconds apart say.
export function summarize(before, after, dt) {
  const rate = (name, where) => (before ? (total(after, name, where) - total(before, name, where)) / dt : null);
  const summary = {
    sessions: total(after, "mcp_sessions"),
    streams: Object.fromEntries(after.filter((s) => s.name === "mcp_open_streams").map((s) => [s.labels.kind, s.value])),
    requestRate: rate("mcp_requests_total"),
    callRate: rate("mcp_requests_total", { method: "tools/call" }),
    meanLatency: null,
    p99Latency: null,
    methods: after.filter((s) => s.name === "mcp_requests_total"),
  };
  if (before) {
    const grown = (name) => total(after, name) - total(before, name);
    const calls = grown("mcp_tool_call_duration_seconds_count");
    const seconds = grown("mcp_tool_call_duration_seconds_sum");
    if (calls > 0) {
      summary.meanLatency = seconds / calls;
      summary.p99Latency = quantile(before, after, 0.99);
    }
  }
  return summary;
}

// Scrape while the operations tab is visible; returns {start(), stop()}.
export function operationsView(elements) {
  let timer = null;
  let previous = null;
  async function scrape() {
    let response;
    try {
      response = await fetch(metricsPath(), { headers: { Accept: "text/plain" }, credentials: "omit" });
    } catch (err) {
      elements.status.textContent = `Cannot reach ${metricsPath()}: ${err.message}`;
      return;
    }
    if (!response.ok) {
      elements.status.textContent = `${metricsPath()} answered HTTP ${response.status}: it is restricted here, so this ` +
        "tab has nothing to show (ask the operator, or scrape it where it is allowed)";
      previous = null;
      return;
    }
    const samples = parsePrometheus(await response.text());
    const now = performance.now();
    show(elements, summarize(previous && previous.samples, samples, previous ? (now - previous.at) / 1000 : 1));
    previous = { samples, at: now };
    const when = new Date().toLocaleTimeString();
    elements.status.textContent = `Scraped ${metricsPath()} at ${when}, every ${SCRAPE_INTERVAL_MS / 1000} s`;
  }
  return {
    start() {
      if (timer) return;
      scrape();
      timer = setInterval(() => document.visibilityState === "visible" && scrape(), SCRAPE_INTERVAL_MS);
    },
    stop() {
      clearInterval(timer);
      timer = null;
    },
  };
}

// Put a summary into the tab's figures and its per-method table.
function show(elements, summary) {
  const perSecond = (value) => (value === null ? "– (next scrape)" : value.toFixed(2));
  const ms = (value) => (value === null ? "–" : `${(value * 1000).toFixed(1)} ms`);
  elements.sessions.textContent = String(summary.sessions);
  const streams = Object.entries(summary.streams);
  elements.streams.textContent = streams.length
    ? streams.map(([kind, count]) => `${kind}: ${count}`).join(", ")
    : "0";
  elements.requestRate.textContent = perSecond(summary.requestRate);
  elements.callRate.textContent = perSecond(summary.callRate);
  elements.latency.textContent = summary.meanLatency === null
    ? "no tool calls since the last scrape"
    : `${ms(summary.meanLatency)}, p99 ≤ ${ms(summary.p99Latency)}`;
  elements.methods.replaceChildren(...summary.methods.map((s) => {
    const row = document.createElement("tr");
    for (const text of [s.labels.method, s.labels.outcome, String(s.value)]) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.append(cell);
    }
    return row;
  }));
}
