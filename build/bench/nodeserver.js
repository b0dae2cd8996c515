// The Node SDK's counterpart of bare.go: the official TypeScript SDK
// (@modelcontextprotocol/sdk, as build/setup.sh installs it beside
// server-everything) serving one trivial tool over Streamable HTTP with
// sessions, as its documentation shows (a McpServer and a transport per
// session), behind the same checks on what comes in (Host naming this
// loopback port, no cross-site Origin, the bearer token). The bench runs
// it with node and NODE_PATH set to the tools' node_modules; its first line
// on stdout is "<url> <token>".
"use strict";
const http = require("node:http");
const crypto = require("node:crypto");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");

const token = crypto.randomBytes(32).toString("hex");
const transports = new Map();

function newSession() {
  const server = new McpServer({ name: "bare-node", version: "1" });
  server.registerTool("ping", { description: "answers pong" }, async () => ({
    content: [{ type: "text", text: '"pong"' }],
  }));
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => crypto.randomUUID(),
    onsessioninitialized: (id) => transports.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) transports.delete(transport.sessionId);
  };
  return server.connect(transport).then(() => transport);
}

function refuse(res, status) {
  res.writeHead(status, { "Content-Type": "text/plain" }).end(http.STATUS_CODES[status]);
}

const httpServer = http.createServer(async (req, res) => {
  const port = httpServer.address().port;
  const host = req.headers.host || "";
  if (![`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(host)) return refuse(res, 403);
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://${host}`) return refuse(res, 403);
  const got = Buffer.from(req.headers.authorization || "");
  const want = Buffer.from("Bearer " + token);
  if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) return refuse(res, 401);
  try {
    const id = req.headers["mcp-session-id"];
    let transport = id && transports.get(id);
    if (!transport) {
      if (id) return refuse(res, 404);
      transport = await newSession();
    }
    await transport.handleRequest(req, res);
  } catch (err) {
    if (!res.headersSent) refuse(res, 500);
    process.stderr.write(`bare node server: ${err}\n`);
  }
});

httpServer.listen(0, "127.0.0.1", () => {
  process.stdout.write(`http://127.0.0.1:${httpServer.address().port}/mcp ${token}\n`);
});
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
