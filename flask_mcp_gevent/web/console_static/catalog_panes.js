// The resource and prompt panes: read resources, fill templates, get prompts, and try completion on both.

import { renderError, renderPromptMessages, renderResourceContents } from "./render.js";
import { el } from "./schema_form.js";
import { describe, exchangeBox, failure, session } from "./detail.js";

// Show a resource and its Read button.
export function showResource(resource) {
  const detail = document.getElementById("resource-detail");
  describe(detail, resource.uri, resource);
  const read = el("button", "read", "Read");
  read.type = "button";
  read.id = "read-button";
  const output = el("div", "output");
  output.id = "read-output";
  read.addEventListener("click", () => readResource(resource.uri, output));
  detail.append(read, output);
}

// Show a template with a field per variable, the URI they make, and its Read button.
export function showTemplate(template) {
  const detail = document.getElementById("resource-detail");
  describe(detail, template.uriTemplate, template);
  const names = [...template.uriTemplate.matchAll(/\{[+#./;?&]?([^}]+)\}/g)].flatMap((m) => m[1].split(","));
  const fields = names.map((name) => completableField(name, { type: "ref/resource", uri: template.uriTemplate }));
  const uri = el("p", "uri");
  const fill = () => {
    const values = Object.fromEntries(fields.map((f) => [f.name, f.input.value]));
    uri.textContent = expandTemplate(template.uriTemplate, values);
  };
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

// Read a URI and show its contents with the exchange.
async function readResource(uri, output) {
  output.replaceChildren(el("p", "hint", "Reading…"));
  try {
    const answer = await session.client.request("resources/read", { uri });
    const box = el("div", "result");
    box.dataset.role = "result";
    if (answer.result) box.append(...answer.result.contents.map(renderResourceContents));
    output.replaceChildren(answer.error ? renderError(answer.error) : box, exchangeBox(answer));
  } catch (err) {
    output.replaceChildren(failure(err));
  }
}

// Show a prompt with a field per argument and its Get button.
export function showPrompt(prompt) {
  const detail = document.getElementById("prompt-detail");
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
      const answer = await session.client.request("prompts/get", { name: prompt.name, arguments: args });
      const shown = answer.error ? renderError(answer.error) : renderPromptMessages(answer.result);
      output.replaceChildren(shown, exchangeBox(answer));
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
  if (session.capabilities.completions) {
    const suggest = el("button", "suggest", "suggest");
    suggest.type = "button";
    suggest.addEventListener("click", async () => {
      const answer = await session.client.request("completion/complete", { ref, argument: { name, value: input.value } });
      const values = answer.result ? answer.result.completion.values : [];
      list.replaceChildren(...values.map((v) => Object.assign(el("option"), { value: v })));
      suggestions.textContent = values.length ? values.join(", ") : "(no suggestions)";
    });
    element.append(suggest, suggestions);
  }
  if (arg.description) element.append(el("small", "description", arg.description));
  return { name, input, element, required: Boolean(arg.required) };
}

