// A client written by others: the official MCP TypeScript SDK, driven by tests/interop/test_ts_sdk.py.
//
// usage: node ts_client.mjs PLAN_JSON
//   PLAN_JSON: {"url": "http://127.0.0.1:N/episodes/ID/mcp"} or {"command": [argv...]},
//              plus "calls": [{"name": ..., "arguments": {...}}, ...]
// Connects, lists the tools (as every real client does first: the SDK then validates structured
// results against each tool's output schema), makes the calls in order and prints one JSON object:
// {"protocolVersion", "server", "tools": [names], "calls": [{"result": CallToolResult} | {"thrown": {code, message}}]}.
// A call the SDK throws on is reported, not fatal: that is what the tests look at.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(process.argv[2]);
const transport = plan.url
  ? new StreamableHTTPClientTransport(new URL(plan.url))
  : new StdioClientTransport({ command: plan.command[0], args: plan.command.slice(1), stderr: "inherit" });
let protocolVersion = null;
const setProtocolVersion = transport.setProtocolVersion?.bind(transport);
transport.setProtocolVersion = (version) => {
  protocolVersion = version;
  setProtocolVersion?.(version);
};

const client = new Client({ name: "shiftbox-interop-ts", version: "1.0.0" });
await client.connect(transport);
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);

const calls = [];
for (const call of plan.calls) {
  try {
    calls.push({ result: await client.callTool({ name: call.name, arguments: call.arguments }) });
  } catch (err) {
    calls.push({ thrown: { code: err.code ?? null, message: String(err.message ?? err) } });
  }
}
await client.close();
console.log(JSON.stringify({ protocolVersion, server: client.getServerVersion(), tools, calls }));
