// Pieces every detail pane shares: the connection it calls through, the definition header, folded JSON,
// the exchange box under each result, and the line that says a call failed.

import { AuthRequired, exchangeOf } from "./mcp_client.js";
import { jsonBlock, renderExchange } from "./render.js";
import { el } from "./schema_form.js";

// The open connection: app.js sets client and capabilities when it connects.
export const session = { client: null, capabilities: {} };

// Definition blocks shared by tools, resources and prompts.
export function describe(detail, heading, item) {
  detail.replaceChildren(el("h2", "", heading));
  if (item.title) detail.append(el("p", "title", item.title));
  if (item.description) detail.append(el("p", "description", item.description));
  const definition = el("details", "definition");
  definition.append(el("summary", "", "definition (as listed)"), jsonBlock(item));
  detail.append(definition);
}

// A JSON block under a summary line, folded unless asked (long schemas would push the form off the screen).
export function folded(title, value, className, open = false) {
  const box = el("details", "folded");
  box.open = open;
  box.append(el("summary", "", title), jsonBlock(value, `json ${className}`));
  return box;
}


// The exact request and response behind an answer, with its curl command.
export function exchangeBox(answer) {
  return renderExchange(exchangeOf(answer), { open: true, revealToken: document.getElementById("reveal-token").checked });
}

// A call that never got an answer (refused credentials, a dropped connection).
export function failure(err) {
  return el("p", "error", `${err instanceof AuthRequired ? "Refused" : "Failed"}: ${err.message}`);
}
