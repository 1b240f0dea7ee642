// The TypeScript SDK's client as a hostile-server target: starts the server that
// MCP_FUZZ_SERVER_ARGV (a JSON list) names (or connects to MCP_FUZZ_SERVER_URL), initializes, lists tools, calls `echo`, prints
// "ok" and exits 0; on an error it prints "error: NAME: message" and exits 1. Every request
// has the timeout MCP_FUZZ_CLIENT_TIMEOUT (seconds). Run it beside a node_modules holding
// @modelcontextprotocol/sdk (tests/peers; see tests/test_fuzz_clients.py).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.env.MCP_FUZZ_SERVER_URL;
const timeout = 1000 * Number(process.env.MCP_FUZZ_CLIENT_TIMEOUT ?? "5");
const client = new Client({ name: "ts-sdk-fuzz-client", version: "1.0.0" });
try {
  const transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : (([command, ...args]) => new StdioClientTransport({ command, args }))(
        JSON.parse(process.env.MCP_FUZZ_SERVER_ARGV));
  await client.connect(transport, { timeout });
  await client.listTools(undefined, { timeout });
  await client.callTool({ name: "echo", arguments: { text: "hi" } }, undefined, { timeout });
  console.log("ok");
  await client.close();
  process.exit(0);
} catch (error) {
  console.error(`error: ${error?.name}: ${String(error?.message).slice(0, 400)}`);
  process.exit(1);
}
