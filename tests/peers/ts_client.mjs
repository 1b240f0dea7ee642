// The TypeScript SDK's client against an MCP server: `node ts_client.mjs stdio CMD ARGS...`
// or `node ts_client.mjs http URL`. Lists tools, calls `add`, reads the first resource, gets
// the first prompt, and prints what it saw as one JSON line (the pytest test asserts on it).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [kind, target, ...args] = process.argv.slice(2);
const transport = kind === "http"
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args });
const client = new Client({ name: "ts-sdk-client", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const sum = await client.callTool({ name: "add", arguments: { a: 20, b: 22 } });
const [resource] = (await client.listResources()).resources;
const read = await client.readResource({ uri: resource.uri });
const [prompt] = (await client.listPrompts()).prompts;
const got = await client.getPrompt({ name: prompt.name, arguments: { name: "Ada" } });
console.log(JSON.stringify({
  server: client.getServerVersion().name, protocol: transport.protocolVersion ?? null,
  tools: tools.tools.map((t) => t.name), sum: sum.content[0].text, resource: read.contents[0].text,
  prompt: got.messages[0].content.text,
}));
await client.close();
