// Rendering: tool results as a client gets them (text, images, audio, embedded resources, resource links,
// structuredContent, isError), resource contents, prompt messages, and each exchange's exact JSON-RPC
// request and response with its curl command. Server text is always set as textContent, never as markup.

import { curlCommand } from "./curl.js";
import { el } from "./schema_form.js";

// Pretty JSON in a <pre>.
export function jsonBlock(value, className = "json") {
  return el("pre", className, JSON.stringify(value, null, 2));
}

// A tool call's result: its content items, structuredContent and an isError banner.
export function renderToolResult(result) {
  const box = el("div", result.isError ? "result is-error" : "result");
  box.dataset.role = "result";
  if (result.isError) box.append(el("p", "error-banner", "isError: true (the tool reported an error)"));
  for (const item of result.content || []) box.append(renderContent(item));
  if (result.structuredContent !== undefined) {
    box.append(el("h4", "", "structuredContent"), jsonBlock(result.structuredContent, "json structured"));
  }
  return box;
}

// A JSON-RPC error answer.
export function renderError(error) {
  const box = el("div", "result rpc-error");
  box.dataset.role = "result";
  box.append(el("p", "error-banner", `JSON-RPC error ${error.code}: ${error.message}`));
  if (error.data !== undefined) box.append(jsonBlock(error.data));
  return box;
}

// One content item of a tool result or prompt message.
export function renderContent(item) {
  const box = el("div", `content content-${item.type}`);
  if (item.type === "text") {
    box.append(el("pre", "text", item.text));
  } else if (item.type === "image") {
    const image = el("img");
    image.alt = "image returned by the tool";
    image.src = `data:${item.mimeType};base64,${item.data}`;
    box.append(image);
  } else if (item.type === "audio") {
    const audio = el("audio");
    audio.controls = true;
    audio.src = `data:${item.mimeType};base64,${item.data}`;
    box.append(audio);
  } else if (item.type === "resource") {
    box.append(renderResourceContents(item.resource));
  } else if (item.type === "resource_link") {
    box.append(el("p", "", `resource link: ${item.uri}${item.name ? ` (${item.name})` : ""}`));
  } else {
    box.append(jsonBlock(item));
  }
  return box;
}

// One entry of resources/read contents, or an embedded resource.
export function renderResourceContents(contents) {
  const box = el("div", "resource-contents");
  box.append(el("p", "uri", `${contents.uri}${contents.mimeType ? ` · ${contents.mimeType}` : ""}`));
  if (contents.text !== undefined) {
    box.append(el("pre", "text", contents.text));
  } else if (contents.blob !== undefined && (contents.mimeType || "").startsWith("image/")) {
    const image = el("img");
    image.alt = contents.uri;
    image.src = `data:${contents.mimeType};base64,${contents.blob}`;
    box.append(image);
  } else if (contents.blob !== undefined) {
    const bytes = Math.floor((contents.blob.length * 3) / 4);
    box.append(el("p", "hint", `binary, about ${bytes} bytes (base64 in the response below)`));
  }
  return box;
}

// A prompts/get result: its description and each message with its role.
export function renderPromptMessages(result) {
  const box = el("div", "result");
  box.dataset.role = "result";
  if (result.description) box.append(el("p", "description", result.description));
  for (const message of result.messages || []) {
    const row = el("div", `message role-${message.role}`);
    row.append(el("h4", "", message.role), renderContent(message.content));
    box.append(row);
  }
  return box;
}

// An exchange: request, what the stream carried, the response, and a button that copies the curl command.
export function renderExchange(exchange, options) {
  const box = el("details", "exchange");
  box.open = options.open || false;
  const method = exchange.request.method || (exchange.request.result !== undefined ? "response to server" : "message");
  box.append(el("summary", "", `${method} → HTTP ${exchange.status}`));
  box.append(el("h4", "", "request"), jsonBlock(exchange.request, "json rpc-request"));
  if (exchange.events.length) box.append(el("h4", "", "on the stream"), jsonBlock(exchange.events, "json rpc-events"));
  if (exchange.response) box.append(el("h4", "", "response"), jsonBlock(exchange.response, "json rpc-response"));
  const curl = el("pre", "curl", curlCommand(exchange, options.revealToken));
  const copy = el("button", "copy-curl", "Copy as curl");
  copy.type = "button";
  copy.addEventListener("click", () => copyText(curl.textContent, copy));
  box.append(el("h4", "", "curl"), curl, copy);
  return box;
}

// Copy to the clipboard; where the browser refuses, select the text so the user can copy it by hand.
async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(button.previousElementSibling);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    button.textContent = "Selected: press Ctrl+C";
  }
}
