// The TypeScript SDK client (@modelcontextprotocol/client 2.4) pinned to MCP 2026-07-28, against one URL.
//
//   node stateless_client.mjs http://127.0.0.1:PORT/mcp RESOURCE_URI
//
// Connects (a pin means: server/discover must offer 2026-07-28, no fallback), lists tools, calls add(2,3),
// reads RESOURCE_URI, gets the code_review prompt, and prints one JSON line of what came back.
// Any failure prints {"error": ...} and exits 1.
import { createRequire } from 'node:module';
import { join } from 'node:path';

// The package lives in tests/conformance/node_modules, not beside this script.
const require = createRequire(join(process.env.MCP_NODE_MODULES ?? '', 'noop.js'));
const { Client, StreamableHTTPClientTransport } = await import(require.resolve('@modelcontextprotocol/client'));

const PIN = '2026-07-28';

async function main(url, resourceUri) {
  const client = new Client(
    { name: 'stateless-ts-client', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: PIN } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const tools = await client.listTools();
    const added = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    const read = await client.readResource({ uri: resourceUri });
    const prompt = await client.getPrompt({ name: 'code_review', arguments: { code: 'x = 1', language: 'python' } });
    return {
      era: client.getProtocolEra(),
      protocolVersion: client.getNegotiatedProtocolVersion(),
      tools: tools.tools.map((tool) => tool.name).sort(),
      add: added.content.map((block) => block.text),
      addStructured: added.structuredContent ?? null,
      resource: read.contents.map((item) => ({ uri: item.uri, mimeType: item.mimeType, text: item.text })),
      prompt: prompt.messages.map((message) => message.content.text),
    };
  } finally {
    await client.close();
  }
}

try {
  console.log(JSON.stringify(await main(process.argv[2], process.argv[3])));
} catch (error) {
  console.log(JSON.stringify({ error: String(error?.message ?? error) }));
  process.exit(1);
}
