// Copy as curl: the exact POST an exchange made, headers and body, as a shell command.
// Credentials stay a placeholder ($MCP_TOKEN, which the shell expands) unless the user asks to reveal them.

// Quote a string for a POSIX shell.
export function shellQuote(text) {
  return `'${String(text).replaceAll("'", "'\\''")}'`;
}

// The curl command for one exchange; -N so a streamed answer prints as it arrives.
export function curlCommand(exchange, revealToken = false) {
  const parts = [`curl -sN ${shellQuote(exchange.url)}`];
  for (const [name, value] of Object.entries(exchange.headers)) {
    if (name === "Authorization" && !revealToken) {
      parts.push(`-H "Authorization: Bearer $MCP_TOKEN"`);
    } else {
      parts.push(`-H ${shellQuote(`${name}: ${value}`)}`);
    }
  }
  parts.push(`-d ${shellQuote(JSON.stringify(exchange.request))}`);
  return parts.join(" \\\n  ");
}
