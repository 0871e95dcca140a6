// The tool pane: a tool's definition, its form (or raw JSON), the call with its progress bar, and the result.

import { renderError, renderToolResult } from "./render.js";
import { buildForm, el, formSupports } from "./schema_form.js";
import { validate } from "./schema_validate.js";
import { describe, exchangeBox, failure, folded, session } from "./detail.js";

let nextProgressToken = 1;

// Show a tool and its form in the tool pane.
export function showTool(tool) {
  const detail = document.getElementById("tool-detail");
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
    const token = `console-${nextProgressToken++}`;
    progress.reset();
    try {
      const answer = await session.client.request(
        "tools/call", { name: tool.name, arguments: args, _meta: { progressToken: token } },
        { onMessage: (msg) => isProgressFor(msg, token) && progress.update(msg.params) },
      );
      const shown = answer.error ? renderError(answer.error) : renderToolResult(answer.result);
      output.replaceChildren(shown, exchangeBox(answer));
    } catch (err) {
      output.replaceChildren(failure(err));
    } finally {
      call.disabled = false;
    }
  });
}

// True for a progress notification about the call with this token.
function isProgressFor(msg, token) {
  return msg.method === "notifications/progress" && msg.params.progressToken === token;
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

// A <progress> that notifications/progress moves, with a "done / total · message" label.
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

