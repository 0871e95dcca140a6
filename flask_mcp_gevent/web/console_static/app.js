// The console page: connect (asking for credentials when the server wants them), list what the server offers,
// and wire the tool, resource, prompt, traffic and operations tabs. Everything it does is an ordinary MCP
// request with the user's own credentials, so what it shows is the server's own filtering for that principal.

import { showPrompt, showResource, showTemplate } from "./catalog_panes.js";
import { session } from "./detail.js";
import { AuthRequired, McpClient, listAll } from "./mcp_client.js";
import { STATELESS_VERSION } from "./stateless_wire.js";
import { operationsView } from "./ops.js";
import { renderExchange } from "./render.js";
import { buildForm, el } from "./schema_form.js";
import { showTool } from "./tool_pane.js";

const TOKEN_KEY = "mcp-console-token"; // sessionStorage: this tab only, gone when it closes
const ENDPOINT = document.querySelector('meta[name="mcp-endpoint"]').content; // where the server mounted MCP
const $ = (id) => document.getElementById(id);

// Connect with the stored token (if any); show the login form when the server asks for credentials.
async function connect(token) {
  session.client = new McpClient({
    endpoint: ENDPOINT, token, handlers: { onNotification, onRequest: answerServerRequest, onExchange: recordExchange },
    versions: serverVersions(), pinned: pinnedVersion(),
  });
  try {
    const result = await session.client.connect();
    showServer(result);
    await loadLists();
    $("status").textContent = "Connected";
    $("status").dataset.state = "connected";
  } catch (err) {
    if (!(err instanceof AuthRequired)) throw err;
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin(token ? `Refused: ${err.message}` : "");
  }
}

// The protocol versions the server speaks, from the page it served.
function serverVersions() {
  return document.querySelector('meta[name="mcp-protocol-versions"]').content.split(" ").filter(Boolean);
}

// A session-era version the address pins (?protocol=2025-11-25), to try that era on a server that speaks both.
function pinnedVersion() {
  const asked = new URLSearchParams(location.search).get("protocol");
  return asked && asked !== STATELESS_VERSION && serverVersions().includes(asked) ? asked : null;
}

// Ask for an API key or bearer token, saying why the last one was refused.
function showLogin(message) {
  $("status").textContent = "Credentials needed";
  $("status").dataset.state = "login";
  $("login").hidden = false;
  $("login-error").textContent = message;
  $("token-input").value = "";
  $("token-input").focus();
}

// Show the server's name, version, instructions and protocol versions, and the tabs.
function showServer(result) {
  $("login").hidden = true;
  $("tabs").hidden = false;
  $("panes").hidden = false;
  $("log-pane").hidden = false;
  $("sign-out").hidden = !session.client.token;
  session.capabilities = result.capabilities || {};
  $("server-name").textContent = result.serverInfo.title || result.serverInfo.name;
  $("server-version").textContent = result.serverInfo.version || "";
  $("protocol-version").textContent = result.protocolVersion;
  $("wire").textContent = session.client.stateless ? "stateless HTTP (the stateless era)"
    : "Streamable HTTP session (the session era)";
  $("protocol-versions").textContent = document.querySelector('meta[name="mcp-protocol-versions"]').content;
  $("instructions").textContent = result.instructions || "";
}

// Fetch every list the server's capabilities offer.
async function loadLists() {
  const caps = session.capabilities;
  const [tools, resources, templates, prompts] = await Promise.all([
    caps.tools ? listAll(session.client, "tools/list", "tools") : [],
    caps.resources ? listAll(session.client, "resources/list", "resources") : [],
    caps.resources ? listAll(session.client, "resources/templates/list", "resourceTemplates") : [],
    caps.prompts ? listAll(session.client, "prompts/list", "prompts") : [],
  ]);
  session.client.setTools(tools);
  fillList($("tool-list"), tools, (t) => t.name, (t) => t.title || t.annotations?.title, showTool);
  fillList($("resource-list"), resources, (r) => r.uri, (r) => r.name, showResource);
  fillList($("template-list"), templates, (t) => t.uriTemplate, (t) => t.name, showTemplate);
  fillList($("prompt-list"), prompts, (p) => p.name, (p) => p.title, showPrompt);
}

// A clickable list; data-key holds the name or URI the filter and the tests look for.
function fillList(list, items, key, label, show) {
  list.replaceChildren(...items.map((item) => {
    const row = el("li");
    row.dataset.key = key(item);
    row.dataset.search = [key(item), label(item), item.description].join(" ").toLowerCase();
    const button = el("button", "", key(item));
    button.type = "button";
    if (label(item) && label(item) !== key(item)) button.append(el("small", "", ` ${label(item)}`));
    button.addEventListener("click", () => {
      list.querySelectorAll("li").forEach((li) => li.classList.toggle("selected", li === row));
      show(item);
    });
    row.append(button);
    return row;
  }));
}

// Hide the rows that do not contain every word typed into input.
function filterList(input, lists) {
  input.addEventListener("input", () => {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    for (const list of lists) {
      for (const row of list.children) row.hidden = !words.every((w) => row.dataset.search.includes(w));
    }
  });
}

// Server messages
function onNotification(msg) {
  if (msg.method === "notifications/message") {
    const { level, logger, data } = msg.params;
    const text = typeof data === "string" ? data : JSON.stringify(data);
    $("log-list").prepend(el("li", `log-${level}`, `${level}${logger ? ` [${logger}]` : ""}: ${text}`));
  } else if (msg.method.endsWith("/list_changed")) {
    loadLists();
  }
}

// Answer a request the server sends while a call runs: elicitation gets a form, ping an empty result.
async function answerServerRequest(msg) {
  if (msg.method === "ping") return {};
  if (msg.method === "elicitation/create") return elicit(msg.params);
  throw new Error(`the console does not answer ${msg.method}`);
}

// Show the elicitation form; resolves with accept (and the content), decline or cancel.
function elicit(params) {
  const dialog = $("elicitation");
  const form = buildForm(params.requestedSchema);
  $("elicitation-message").textContent = params.message;
  $("elicitation-fields").replaceChildren(form.element);
  $("elicitation-errors").textContent = "";
  return new Promise((resolve) => {
    const finish = (answer) => {
      dialog.close();
      $("elicitation-form").onsubmit = $("elicit-decline").onclick = $("elicit-cancel").onclick = null;
      dialog.oncancel = null;
      resolve(answer);
    };
    $("elicitation-form").onsubmit = (event) => {
      event.preventDefault();
      const { value, errors } = form.read();
      if (errors.length) {
        $("elicitation-errors").textContent = errors.map((e) => `${e.path}: ${e.message}`).join("; ");
        return;
      }
      finish({ action: "accept", content: value });
    };
    $("elicit-decline").onclick = () => finish({ action: "decline" });
    $("elicit-cancel").onclick = () => finish({ action: "cancel" });
    // Escape closes a modal dialog by itself; the server still needs an answer.
    dialog.oncancel = (event) => {
      event.preventDefault();
      finish({ action: "cancel" });
    };
    dialog.showModal();
  });
}

// Traffic: the newest exchanges first, the oldest dropped past MAX_TRAFFIC so a long session stays light.
const MAX_TRAFFIC = 200;

// Add an exchange to the traffic tab.
function recordExchange(exchange) {
  const list = $("traffic-list");
  const item = el("li");
  item.append(renderExchange(exchange, { revealToken: $("reveal-token").checked }));
  list.prepend(item);
  while (list.children.length > MAX_TRAFFIC) list.lastElementChild.remove();
}

// Tabs
function wireTabs(ops) {
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => {
      for (const other of document.querySelectorAll("#tabs button")) other.classList.toggle("active", other === button);
      for (const pane of document.querySelectorAll(".pane")) pane.hidden = pane.id !== `pane-${button.dataset.tab}`;
      if (button.dataset.tab === "operations") ops.start();
      else ops.stop();
    });
  }
}

// Wire the page once, then connect with the token this tab holds (if any).
function main() {
  const ops = operationsView({
    status: $("ops-status"), sessions: $("ops-sessions"), streams: $("ops-streams"),
    requestRate: $("ops-request-rate"), callRate: $("ops-call-rate"), latency: $("ops-latency"),
    methods: document.querySelector("#ops-methods tbody"),
  });
  wireTabs(ops);
  filterList($("tool-filter"), [$("tool-list")]);
  filterList($("resource-filter"), [$("resource-list"), $("template-list")]);
  filterList($("prompt-filter"), [$("prompt-list")]);
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    sessionStorage.setItem(TOKEN_KEY, token);
    connect(token);
  });
  $("sign-out").addEventListener("click", async () => {
    sessionStorage.removeItem(TOKEN_KEY);
    await session.client.close();
    location.reload();
  });
  $("log-clear").addEventListener("click", () => $("log-list").replaceChildren());
  addEventListener("pagehide", () => session.client && session.client.close());
  connect(sessionStorage.getItem(TOKEN_KEY) || "").catch((err) => {
    $("status").textContent = `Cannot connect: ${err.message}`;
    $("status").dataset.state = "failed";
  });
}

main();
