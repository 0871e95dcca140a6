// A TypeScript SDK client over legacy HTTP+SSE (GET stream, POSTed messages) against one URL.
//
//   node legacy_sse_client.mjs http://127.0.0.1:PORT/mcp LIBRARY MODE
//
// LIBRARY is `client` (@modelcontextprotocol/client 2.x) or `sdk` (@modelcontextprotocol/sdk 1.x). MODE is the 2.x
// client's versionNegotiation: `default` (no option: the library's own default), `legacy`, `auto`, or a version to
// pin; the 1.x SDK has no modes (pass `default`). Connects with the library's SSEClientTransport, lists tools,
// calls echo, and prints one JSON line of what came back; any failure prints {"error": ...} and exits 1.
import { createRequire } from 'node:module';
import { join } from 'node:path';

// The packages live in tests/conformance/node_modules, not beside this script.
const require = createRequire(join(process.env.MCP_NODE_MODULES ?? '', 'noop.js'));

async function load(library) {
  if (library === 'client') {
    const { Client, SSEClientTransport } = await import(require.resolve('@modelcontextprotocol/client'));
    return { Client, SSEClientTransport };
  }
  const { Client } = await import(require.resolve('@modelcontextprotocol/sdk/client/index.js'));
  const { SSEClientTransport } = await import(require.resolve('@modelcontextprotocol/sdk/client/sse.js'));
  return { Client, SSEClientTransport };
}

function clientOptions(mode) {
  if (mode === 'default') return {};
  const negotiation = mode === 'legacy' || mode === 'auto' ? mode : { pin: mode };
  return { versionNegotiation: { mode: negotiation } };
}

function negotiatedVersion(client, transport) {
  // The 2.x client says which version it settled on; the 1.x client leaves it on its transport.
  return client.getNegotiatedProtocolVersion?.() ?? transport._protocolVersion ?? null;
}

async function main(url, library, mode) {
  const { Client, SSEClientTransport } = await load(library);
  const client = new Client({ name: `legacy-sse-${library}`, version: '1.0.0' }, clientOptions(mode));
  const transport = new SSEClientTransport(new URL(url));
  await client.connect(transport);
  try {
    const tools = await client.listTools();
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'over legacy SSE' } });
    return {
      protocolVersion: negotiatedVersion(client, transport),
      tools: tools.tools.map((tool) => tool.name).sort(),
      echo: echoed.content.map((block) => block.text),
    };
  } finally {
    await client.close();
  }
}

try {
  console.log(JSON.stringify(await main(process.argv[2], process.argv[3], process.argv[4])));
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.message ?? error) }));
  process.exit(1);
}
