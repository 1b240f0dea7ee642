// The TypeScript SDK's client through the feature matrix of bench/client_matrix.py:
// `node ts_matrix.mjs http URL` or `node ts_matrix.mjs stdio CMD ARGS...`. Prints one JSON
// object: the protocol it negotiated and, per feature, what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [kind, target, ...args] = process.argv.slice(2);
const transport = kind === "http"
  ? new StreamableHTTPClientTransport(new URL(target))
  : new StdioClientTransport({ command: target, args });
const client = new Client({ name: "ts-sdk-matrix", version: "1.0.0" });
const seen = {};
async function probe(name, body) {
  try { seen[name] = await body(); } catch (err) { seen[name] = { error: String(err && err.message || err) }; }
}
await probe("initialize", async () => { await client.connect(transport); return client.getServerVersion().name; });
await probe("tools_list", async () => {
  const tools = (await client.listTools()).tools;
  return tools.find((t) => t.name === "add")?.outputSchema ?? null;
});
await probe("call_int", async () => {
  const r = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  return { text: r.content[0].text, structured: r.structuredContent ?? null };
});
await probe("prompts", async () =>
  (await client.getPrompt({ name: "greet", arguments: { name: "Ada" } })).messages[0].content.text);
await probe("resources", async () =>
  (await client.readResource({ uri: "newcomer://readme" })).contents[0].text);
await probe("progress", async () => {
  const steps = [];
  await client.callTool({ name: "report", arguments: { steps: 3 } }, undefined,
    { onprogress: (p) => steps.push(p.progress) });
  return steps;
});
await probe("errors", async () => {
  const r = await client.callTool({ name: "refuse", arguments: { city: "Atlantis" } });
  return { isError: r.isError ?? false, text: r.content[0].text };
});
seen.protocol = transport.protocolVersion ?? null;
console.log(JSON.stringify(seen));
await client.close();
