// The MCP client: 2026-07-28 over stateless HTTP wherever the server speaks it (stateless_wire.js), or a
// Streamable HTTP session (protocol 2025-11-25) when the page's ?protocol= pins a session-era version or the
// server does not list 2026-07-28. In a session, initialize opens it (Mcp-Session-Id); every later POST accepts
// JSON or an SSE stream, so progress, log messages and server requests (elicitation) arrive on the POST's own
// stream before its result. A server that refuses initialize with -32022 is spoken to statelessly too.
// Every exchange is reported to onExchange with the exact headers and bodies, for the traffic pane and curl.

import {
  MAX_INPUT_ROUNDS, STATELESS_VERSION, answerInputRequests, asServerDescription, statelessHeaders, withMeta,
} from "./stateless_wire.js";

export const PROTOCOL_VERSION = "2025-11-25";
const ACCEPT = "application/json, text/event-stream";
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

const EXCHANGES = new WeakMap(); // response message -> the exchange that carried it

export class AuthRequired extends Error {}

// The exchange (headers, request, stream events, response) behind a response that request() returned.
export function exchangeOf(answer) {
  return EXCHANGES.get(answer);
}

export class McpClient {
  // versions: what the server speaks (the page's meta tag); pinned: a session-era version to use instead, or null.
  constructor({ endpoint, token, handlers, versions = [], pinned = null }) {
    this.endpoint = endpoint;
    this.versions = versions;
    this.pinned = pinned;
    this.token = token || "";
    this.handlers = handlers; // {onNotification(msg), onRequest(msg) -> Promise<result>, onExchange(exchange)}
    this.sessionId = null;
    this.protocolVersion = PROTOCOL_VERSION;
    this.stateless = false;
    this.toolSchemas = new Map(); // name -> inputSchema, for the 2026-07-28 Mcp-Param-* headers
    this.nextId = 1;
  }

  // Speak 2026-07-28 where the server does (unless pinned), else open a session; resolves with what the server
  // says of itself (the discover or initialize result), or throws AuthRequired on 401.
  async connect() {
    if (!this.pinned && this.versions.includes(STATELESS_VERSION)) return this.discover();
    const params = {
      protocolVersion: this.pinned || PROTOCOL_VERSION,
      capabilities: { elicitation: {} },
      clientInfo: { name: "mcp-console", version: "1" },
    };
    const answer = await this.request("initialize", params);
    const refused = answer.error && answer.error.code === UNSUPPORTED_PROTOCOL_VERSION;
    if (refused && ((answer.error.data || {}).supported || []).includes(STATELESS_VERSION)) return this.discover();
    if (answer.error) throw new Error(answer.error.message);
    this.protocolVersion = answer.result.protocolVersion;
    await this.notify("notifications/initialized");
    return answer.result;
  }

  // Speak 2026-07-28 from now on: server/discover says what the server is and offers.
  async discover() {
    this.stateless = true;
    this.protocolVersion = STATELESS_VERSION;
    const answer = await this.request("server/discover");
    if (answer.error) throw new Error(answer.error.message);
    return asServerDescription(answer.result);
  }

  // Remember the tools' input schemas: their x-mcp-header arguments travel in headers too (2026-07-28).
  setTools(tools) {
    this.toolSchemas = new Map(tools.map((tool) => [tool.name, tool.inputSchema]));
  }

  // Send a request; resolves with the JSON-RPC response message (result or error).
  // On 2026-07-28 an input_required result is answered (onRequest) and retried, round after round.
  async request(method, params, options = {}) {
    let answer = await this.send(method, params, options);
    for (let round = 0; this.stateless && round < MAX_INPUT_ROUNDS; round++) {
      const result = answer.result;
      if (!result || result.resultType !== "input_required") break;
      const inputResponses = await answerInputRequests(result.inputRequests, this.handlers.onRequest);
      const retry = { ...(params || {}), inputResponses };
      if (result.requestState !== undefined) retry.requestState = result.requestState;
      answer = await this.send(method, retry, options);
    }
    return answer;
  }

  // One request and its response message.
  async send(method, params, { onMessage } = {}) {
    const message = { jsonrpc: "2.0", id: this.nextId++, method };
    if (this.stateless) message.params = withMeta(method, params);
    else if (params !== undefined) message.params = params;
    const exchange = this.newExchange(message);
    const response = await this.post(message, exchange);
    const answer = await this.readAnswer(response, message.id, exchange, onMessage);
    exchange.response = answer;
    EXCHANGES.set(answer, exchange);
    this.handlers.onExchange(exchange);
    return answer;
  }

  // Send a notification (the server answers 202 with no body).
  async notify(method, params) {
    const message = { jsonrpc: "2.0", method };
    if (params !== undefined) message.params = params;
    const exchange = this.newExchange(message);
    await this.post(message, exchange);
    this.handlers.onExchange(exchange);
  }

  // The headers every POST carries; the token is left out when there is none.
  headers(message) {
    const headers = { "Content-Type": "application/json", Accept: ACCEPT };
    if (this.stateless && message.method) {
      const name = message.params && message.params.name;
      Object.assign(headers, statelessHeaders(message, this.toolSchemas.get(name)));
    } else if (this.sessionId) {
      headers["Mcp-Session-Id"] = this.sessionId;
      headers["MCP-Protocol-Version"] = this.protocolVersion;
    }
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    return headers;
  }

  newExchange(message) {
    return { url: new URL(this.endpoint, location.href).href, headers: this.headers(message), request: message,
             status: null, events: [], response: null };
  }

  // POST one message; a credentials challenge (401, or 403 for a missing scope) becomes AuthRequired.
  async post(message, exchange) {
    const response = await fetch(this.endpoint, {
      method: "POST", headers: exchange.headers, body: JSON.stringify(message), credentials: "omit",
    });
    exchange.status = response.status;
    const challenged = response.status === 403 && response.headers.has("WWW-Authenticate");
    if (response.status === 401 || challenged) {
      const body = await response.json().catch(() => ({}));
      throw new AuthRequired(body.error ? body.error.message : "Unauthorized");
    }
    const session = response.headers.get("Mcp-Session-Id");
    if (session) this.sessionId = session;
    return response;
  }

  // Read a JSON body or an SSE stream until the response to id arrives.
  async readAnswer(response, id, exchange, onMessage) {
    const type = response.headers.get("Content-Type") || "";
    if (!type.startsWith("text/event-stream")) {
      const text = await response.text();
      try {
        return JSON.parse(text);
      } catch {
        return { jsonrpc: "2.0", id, error: { code: 0, message: `HTTP ${response.status}: ${text}` } };
      }
    }
    for await (const data of sseData(response.body)) {
      const msg = JSON.parse(data);
      exchange.events.push(msg);
      if (msg.id === id && ("result" in msg || "error" in msg)) return msg;
      await this.dispatch(msg, onMessage);
    }
    return { jsonrpc: "2.0", id, error: { code: 0, message: "the stream ended before the response" } };
  }

  // Route a message from the server: notifications to the handlers, requests answered by POSTing a response.
  async dispatch(msg, onMessage) {
    if (!msg.method) return;
    if (msg.id === undefined) {
      if (onMessage) onMessage(msg);
      this.handlers.onNotification(msg);
      return;
    }
    let reply;
    try {
      reply = { jsonrpc: "2.0", id: msg.id, result: await this.handlers.onRequest(msg) };
    } catch (err) {
      reply = { jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: String(err.message || err) } };
    }
    const exchange = this.newExchange(reply);
    await this.post(reply, exchange);
    this.handlers.onExchange(exchange);
  }

  // End the session (DELETE), best effort; 2026-07-28 has none to end.
  async close() {
    if (!this.sessionId || this.stateless) return;
    const headers = { "Mcp-Session-Id": this.sessionId };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    await fetch(this.endpoint, { method: "DELETE", headers, credentials: "omit", keepalive: true }).catch(() => {});
    this.sessionId = null;
  }
}

// Yield the data of each SSE event in a byte stream (events without data, like priming events, are skipped).
export async function* sseData(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.search(/\r?\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(buffer[newline] === "\r" ? newline + 2 : newline + 1);
      if (line === "") {
        if (data.join("").trim()) yield data.join("\n");
        data = [];
      } else if (line.startsWith("data:")) {
        data.push(line.slice(5).replace(/^ /, ""));
      }
    }
  }
  if (data.join("").trim()) yield data.join("\n");
}

// Collect every page of a list method (bounded, so a looping cursor cannot hang the page).
export async function listAll(client, method, key, maxPages = 50) {
  const items = [];
  let cursor;
  for (let page = 0; page < maxPages; page++) {
    const answer = await client.request(method, cursor ? { cursor } : undefined);
    if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
    items.push(...(answer.result[key] || []));
    cursor = answer.result.nextCursor;
    if (!cursor) break;
  }
  return items;
}
