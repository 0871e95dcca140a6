// The 2026-07-28 wire for the console, used when the server speaks only it (MCP_SESSION_ERA=0): no initialize and no
// session; every POST carries the protocol version and client capabilities in _meta and repeats its method, name
// and x-mcp-header arguments in headers; a tool that asks the user answers input_required, and the retry carries
// the answers (inputResponses) with the server's requestState.

export const STATELESS_VERSION = "2026-07-28";
export const CLIENT_INFO = { name: "mcp-console", version: "1" };
export const CLIENT_CAPABILITIES = { elicitation: {} };
export const MAX_INPUT_ROUNDS = 10; // a server that keeps asking cannot hold the page forever
const NAME_SOURCES = { "tools/call": "name", "prompts/get": "name", "resources/read": "uri" };
const META = "io.modelcontextprotocol/";

// params with the _meta this wire requires on every request (the caller's own _meta keys kept).
export function withMeta(method, params) {
  const given = (params && params._meta) || {};
  const meta = {
    ...given,
    [`${META}protocolVersion`]: STATELESS_VERSION,
    [`${META}clientInfo`]: CLIENT_INFO,
    [`${META}clientCapabilities`]: CLIENT_CAPABILITIES,
  };
  // A tool's log messages reach its request's stream only when the request names a level.
  if (method === "tools/call") meta[`${META}logLevel`] = "info";
  return { ...(params || {}), _meta: meta };
}

// A header value as the server compares it: as it is when it is plain visible ASCII, else the Base64 form.
export function headerValue(value) {
  const text = String(value);
  if (/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(text) && !text.startsWith("=?base64?")) return text;
  const bytes = new TextEncoder().encode(text);
  return `=?base64?${btoa(String.fromCharCode(...bytes))}?=`;
}

// The Mcp-Param-* headers a tool's x-mcp-header properties ask for, with the arguments' values.
export function paramHeaders(schema, args, path = []) {
  const headers = {};
  const properties = (schema && schema.properties) || {};
  for (const [name, property] of Object.entries(properties)) {
    const value = args && typeof args === "object" ? args[name] : undefined;
    if (value === undefined || value === null) continue;
    if (property && typeof property["x-mcp-header"] === "string") {
      headers[`Mcp-Param-${property["x-mcp-header"]}`] = headerValue(value);
    } else if (property && property.properties) {
      Object.assign(headers, paramHeaders(property, value, [...path, name]));
    }
  }
  return headers;
}

// The headers that repeat a request's body: version, method, and the name or URI it acts on.
export function statelessHeaders(message, toolSchema) {
  const headers = { "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": message.method };
  const source = NAME_SOURCES[message.method];
  const name = source && message.params ? message.params[source] : undefined;
  if (name !== undefined) headers["Mcp-Name"] = headerValue(name);
  if (message.method === "tools/call" && toolSchema) {
    Object.assign(headers, paramHeaders(toolSchema, message.params.arguments));
  }
  return headers;
}

// server/discover's answer in the shape the page shows for initialize's.
export function asServerDescription(result) {
  return {
    protocolVersion: STATELESS_VERSION,
    capabilities: result.capabilities || {},
    serverInfo: (result._meta || {})[`${META}serverInfo`] || { name: "MCP server" },
    instructions: result.instructions || "",
  };
}

// Answer each of an input_required result's requests through onRequest: the inputResponses of the retry.
export async function answerInputRequests(inputRequests, onRequest) {
  const responses = {};
  for (const [key, request] of Object.entries(inputRequests || {})) {
    responses[key] = await onRequest({ method: request.method, params: request.params || {} });
  }
  return responses;
}
