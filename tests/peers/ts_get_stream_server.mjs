// A TypeScript SDK server that asks its client on the standalone GET stream only, as the
// conformance suite's elicitation mocks do: `node ts_get_stream_server.mjs PORT GET_DELAY_MS`.
// Its tool `ask` sends `elicitation/create` with no related request, so the SDK writes it on
// the session's GET stream and silently drops it while none is open. Every GET is handled
// GET_DELAY_MS late (the stream is registered, and its head written, only then), so a client
// whose first request reaches the server before its GET stream is open loses the question:
// the tool then fails after 3 s. `echo` asks nothing.
import { randomUUID } from "node:crypto";
import http from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ElicitResultSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [port, getDelayMs] = process.argv.slice(2).map(Number);
const sessions = new Map();

function newServer() {
  const server = new Server({ name: "ts-get-stream-server", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: ["ask", "echo"].map((name) => ({ name, inputSchema: { type: "object", properties: {} } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    if (request.params.name === "echo") {
      return { content: [{ type: "text", text: "echo" }] };
    }
    try {
      const answer = await server.request({ method: "elicitation/create", params: {
        message: "Who are you?",
        requestedSchema: { type: "object", properties: { name: { type: "string" } } },
      } }, ElicitResultSchema, { timeout: 3000 });
      return { content: [{ type: "text", text: `hello ${answer.content?.name}` }] };
    } catch (error) {
      return { content: [{ type: "text", text: `no answer: ${error.message}` }], isError: true };
    }
  });
  return server;
}

http.createServer(async (req, res) => {
  const chunks = [];
  for await (const piece of req) chunks.push(piece);
  const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
  if (req.method === "GET") await new Promise((done) => setTimeout(done, getDelayMs));
  const sid = req.headers["mcp-session-id"];
  let transport = sid === undefined ? undefined : sessions.get(sid);
  if (transport === undefined) {
    if (sid !== undefined || req.method !== "POST" || body?.method !== "initialize") {
      res.writeHead(sid === undefined ? 400 : 404).end("no such session");
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => sessions.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}).listen(port, "127.0.0.1");
