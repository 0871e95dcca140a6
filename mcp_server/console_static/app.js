// The console page: connect (asking for credentials when the server wants them), list what the server offers,
// and wire the tool, resource, prompt, traffic and operations tabs. Everything it does is an ordinary MCP
// request with the user's own credentials, so what it shows is the server's own filtering for that principal.

import { AuthRequired, McpClient, exchangeOf, listAll } from "./mcp_client.js";
import { operationsView } from "./ops.js";
import {
  jsonBlock, renderError, renderExchange, renderPromptMessages, renderResourceContents, renderToolResult,
} from "./render.js";
import { buildForm, el, formSupports } from "./schema_form.js";
import { validate } from "./schema_validate.js";

const TOKEN_KEY = "mcp-console-token"; // sessionStorage: this tab only, gone when it closes
const ENDPOINT = "/mcp";
const $ = (id) => document.getElementById(id);
const state = { client: null, capabilities: {}, nextProgress: 1, progress: new Map() };

// Connect with the stored token (if any); show the login form when the server asks for credentials.
async function connect(token) {
  state.client = new McpClient({
    endpoint: ENDPOINT, token, handlers: { onNotification, onRequest: answerServerRequest, onExchange: recordExchange },
  });
  try {
    const result = await state.client.connect();
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

function showLogin(message) {
  $("status").textContent = "Credentials needed";
  $("status").dataset.state = "login";
  $("login").hidden = false;
  $("login-error").textContent = message;
  $("token-input").value = "";
  $("token-input").focus();
}

function showServer(result) {
  $("login").hidden = true;
  $("tabs").hidden = false;
  $("panes").hidden = false;
  $("log-pane").hidden = false;
  $("sign-out").hidden = !state.client.token;
  state.capabilities = result.capabilities || {};
  $("server-name").textContent = result.serverInfo.title || result.serverInfo.name;
  $("server-version").textContent = result.serverInfo.version || "";
  $("protocol-version").textContent = result.protocolVersion;
  $("protocol-versions").textContent = document.querySelector('meta[name="mcp-protocol-versions"]').content;
  $("instructions").textContent = result.instructions || "";
}

// Fetch every list the server's capabilities offer.
async function loadLists() {
  const caps = state.capabilities;
  const [tools, resources, templates, prompts] = await Promise.all([
    caps.tools ? listAll(state.client, "tools/list", "tools") : [],
    caps.resources ? listAll(state.client, "resources/list", "resources") : [],
    caps.resources ? listAll(state.client, "resources/templates/list", "resourceTemplates") : [],
    caps.prompts ? listAll(state.client, "prompts/list", "prompts") : [],
  ]);
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

function filterList(input, lists) {
  input.addEventListener("input", () => {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    for (const list of lists) {
      for (const row of list.children) row.hidden = !words.every((w) => row.dataset.search.includes(w));
    }
  });
}

// Definition blocks shared by tools, resources and prompts.
function describe(detail, heading, item) {
  detail.replaceChildren(el("h2", "", heading));
  if (item.title) detail.append(el("p", "title", item.title));
  if (item.description) detail.append(el("p", "description", item.description));
  const definition = el("details", "definition");
  definition.append(el("summary", "", "definition (as listed)"), jsonBlock(item));
  detail.append(definition);
}

// A JSON block under a summary line, folded unless asked (long schemas would push the form off the screen).
function folded(title, value, className, open = false) {
  const box = el("details", "folded");
  box.open = open;
  box.append(el("summary", "", title), jsonBlock(value, `json ${className}`));
  return box;
}

// Tools
function showTool(tool) {
  const detail = $("tool-detail");
  describe(detail, tool.name, tool);
  if (tool.annotations) detail.append(folded("annotations", tool.annotations, "annotations", true));
  detail.append(folded("input schema", tool.inputSchema, "input-schema"));
  if (tool.outputSchema) detail.append(folded("output schema", tool.outputSchema, "output-schema"));

  const formOk = formSupports(tool.inputSchema);
  const form = formOk ? buildForm(tool.inputSchema) : null;
  const raw = el("textarea", "json raw-input");
  raw.id = "raw-input";
  raw.value = "{}";
  const rawToggle = el("input");
  rawToggle.type = "checkbox";
  rawToggle.id = "raw-toggle";
  rawToggle.checked = !formOk;
  rawToggle.disabled = !formOk;
  const toggleLabel = el("label", "", " raw JSON arguments");
  toggleLabel.prepend(rawToggle);
  const formBox = el("form", "tool-form");
  formBox.id = "tool-form";
  if (form) formBox.append(form.element);
  const showMode = () => {
    formBox.hidden = rawToggle.checked;
    raw.hidden = !rawToggle.checked;
    if (rawToggle.checked && form) raw.value = JSON.stringify(form.read().value, null, 2);
  };
  rawToggle.addEventListener("change", showMode);
  const call = el("button", "call", "Call tool");
  call.type = "button";
  call.id = "call-button";
  const errors = el("ul", "error");
  errors.id = "call-errors";
  const progress = progressBar();
  const output = el("div", "output");
  output.id = "call-output";
  detail.append(el("h3", "", "Try it"), toggleLabel, formBox, raw, errors, call, progress.element, output);
  showMode();
  formBox.addEventListener("submit", (event) => {
    event.preventDefault();
    call.click();
  });
  call.addEventListener("click", async () => {
    const args = readArguments(rawToggle.checked ? null : form, raw, tool.inputSchema, errors);
    if (args === null) return;
    call.disabled = true;
    output.replaceChildren(el("p", "hint", "Calling…"));
    const token = `console-${state.nextProgress++}`;
    progress.reset();
    try {
      const answer = await state.client.request(
        "tools/call", { name: tool.name, arguments: args, _meta: { progressToken: token } },
        { onMessage: (msg) => msg.method === "notifications/progress" && msg.params.progressToken === token && progress.update(msg.params) },
      );
      output.replaceChildren(answer.error ? renderError(answer.error) : renderToolResult(answer.result), exchangeBox(answer));
    } catch (err) {
      output.replaceChildren(failure(err));
    } finally {
      call.disabled = false;
    }
  });
}

// The arguments to send, or null after showing why not (form errors, or raw text that is not JSON).
function readArguments(form, raw, schema, errors) {
  errors.replaceChildren();
  const say = (list) => errors.replaceChildren(...list.map((e) => el("li", "", `${e.path}: ${e.message}`)));
  if (form) {
    const { value, errors: problems } = form.read();
    if (problems.length) {
      say(problems);
      return null;
    }
    return value;
  }
  let value;
  try {
    value = JSON.parse(raw.value);
  } catch (err) {
    say([{ path: "raw JSON", message: `is not valid JSON (${err.message})` }]);
    return null;
  }
  // Raw mode is for what the form cannot express: warn, but let the server have the last word.
  const warnings = validate(schema, value);
  if (warnings.length) {
    say(warnings.map((w) => ({ path: w.path, message: `${w.message} (sent anyway: raw mode)` })));
    errors.classList.add("warning");
  }
  return value;
}

function progressBar() {
  const element = el("div", "progress");
  element.hidden = true;
  const bar = el("progress");
  bar.id = "call-progress";
  const label = el("span", "progress-label");
  element.append(bar, label);
  return {
    element,
    reset() {
      element.hidden = true;
      bar.removeAttribute("value");
      delete bar.dataset.progress;
      label.textContent = "";
    },
    update({ progress, total, message }) {
      element.hidden = false;
      if (total) bar.max = total;
      bar.value = progress;
      bar.dataset.progress = String(progress);
      label.textContent = `${progress}${total ? ` / ${total}` : ""}${message ? ` · ${message}` : ""}`;
    },
  };
}

// Resources and templates
function showResource(resource) {
  const detail = $("resource-detail");
  describe(detail, resource.uri, resource);
  const read = el("button", "read", "Read");
  read.type = "button";
  read.id = "read-button";
  const output = el("div", "output");
  output.id = "read-output";
  read.addEventListener("click", () => readResource(resource.uri, output));
  detail.append(read, output);
}

function showTemplate(template) {
  const detail = $("resource-detail");
  describe(detail, template.uriTemplate, template);
  const names = [...template.uriTemplate.matchAll(/\{[+#./;?&]?([^}]+)\}/g)].flatMap((m) => m[1].split(","));
  const fields = names.map((name) => completableField(name, { type: "ref/resource", uri: template.uriTemplate }));
  const uri = el("p", "uri");
  const fill = () => (uri.textContent = expandTemplate(template.uriTemplate, Object.fromEntries(fields.map((f) => [f.name, f.input.value]))));
  fields.forEach((f) => f.input.addEventListener("input", fill));
  fill();
  const read = el("button", "read", "Read");
  read.type = "button";
  read.id = "read-button";
  const output = el("div", "output");
  output.id = "read-output";
  read.addEventListener("click", () => readResource(uri.textContent, output));
  detail.append(el("h3", "", "Fill the template"), ...fields.map((f) => f.element), uri, read, output);
}

// Expand the RFC 6570 forms a resource template uses: {var}, {+var} (reserved characters kept).
function expandTemplate(template, values) {
  return template.replace(/\{([+#]?)([^}]+)\}/g, (_, op, name) => {
    const value = values[name] || "";
    return op ? encodeURI(value) : encodeURIComponent(value);
  });
}

async function readResource(uri, output) {
  output.replaceChildren(el("p", "hint", "Reading…"));
  try {
    const answer = await state.client.request("resources/read", { uri });
    const box = el("div", "result");
    box.dataset.role = "result";
    if (answer.result) box.append(...answer.result.contents.map(renderResourceContents));
    output.replaceChildren(answer.error ? renderError(answer.error) : box, exchangeBox(answer));
  } catch (err) {
    output.replaceChildren(failure(err));
  }
}

// Prompts
function showPrompt(prompt) {
  const detail = $("prompt-detail");
  describe(detail, prompt.name, prompt);
  const fields = (prompt.arguments || []).map((arg) => {
    const field = completableField(arg.name, { type: "ref/prompt", name: prompt.name }, arg);
    return field;
  });
  const errors = el("ul", "error");
  const get = el("button", "get", "Get prompt");
  get.type = "button";
  get.id = "get-button";
  const output = el("div", "output");
  output.id = "prompt-output";
  get.addEventListener("click", async () => {
    const missing = fields.filter((f) => f.required && f.input.value === "");
    errors.replaceChildren(...missing.map((f) => el("li", "", `${f.name}: is required`)));
    if (missing.length) return;
    const args = Object.fromEntries(fields.filter((f) => f.input.value !== "").map((f) => [f.name, f.input.value]));
    try {
      const answer = await state.client.request("prompts/get", { name: prompt.name, arguments: args });
      output.replaceChildren(answer.error ? renderError(answer.error) : renderPromptMessages(answer.result), exchangeBox(answer));
    } catch (err) {
      output.replaceChildren(failure(err));
    }
  });
  detail.append(el("h3", "", "Arguments"), ...fields.map((f) => f.element), errors, get, output);
}

// A text field with a "suggest" button that asks completion/complete (when the server offers completions).
function completableField(name, ref, arg = {}) {
  const element = el("div", "field");
  element.dataset.path = name;
  const input = el("input");
  input.type = "text";
  input.name = name;
  input.id = `arg-${name}`;
  const list = el("datalist");
  list.id = `arg-${name}-options`;
  input.setAttribute("list", list.id);
  const label = el("label", arg.required ? "required" : "", name);
  label.htmlFor = input.id;
  element.append(label, input, list);
  const suggestions = el("span", "completions");
  if (state.capabilities.completions) {
    const suggest = el("button", "suggest", "suggest");
    suggest.type = "button";
    suggest.addEventListener("click", async () => {
      const answer = await state.client.request("completion/complete", { ref, argument: { name, value: input.value } });
      const values = answer.result ? answer.result.completion.values : [];
      list.replaceChildren(...values.map((v) => Object.assign(el("option"), { value: v })));
      suggestions.textContent = values.length ? values.join(", ") : "(no suggestions)";
    });
    element.append(suggest, suggestions);
  }
  if (arg.description) element.append(el("small", "description", arg.description));
  return { name, input, element, required: Boolean(arg.required) };
}

// Server messages
function onNotification(msg) {
  if (msg.method === "notifications/message") {
    const { level, logger, data } = msg.params;
    const row = el("li", `log-${level}`, `${level}${logger ? ` [${logger}]` : ""}: ${typeof data === "string" ? data : JSON.stringify(data)}`);
    $("log-list").prepend(row);
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

function recordExchange(exchange) {
  const list = $("traffic-list");
  const item = el("li");
  item.append(renderExchange(exchange, { revealToken: $("reveal-token").checked }));
  list.prepend(item);
  while (list.children.length > MAX_TRAFFIC) list.lastElementChild.remove();
}

function exchangeBox(answer) {
  return renderExchange(exchangeOf(answer), { open: true, revealToken: $("reveal-token").checked });
}

function failure(err) {
  return el("p", "error", `${err instanceof AuthRequired ? "Refused" : "Failed"}: ${err.message}`);
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
    await state.client.close();
    location.reload();
  });
  $("log-clear").addEventListener("click", () => $("log-list").replaceChildren());
  addEventListener("pagehide", () => state.client && state.client.close());
  connect(sessionStorage.getItem(TOKEN_KEY) || "").catch((err) => {
    $("status").textContent = `Cannot connect: ${err.message}`;
    $("status").dataset.state = "failed";
  });
}

main();
