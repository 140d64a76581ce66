// Drives cnki-mcp with the official TypeScript SDK client (1.x): list tools, then run the steps
// of a plan (JSON file, argv[2]) and print one JSON report on stdout. callTool validates every
// structuredContent against the tool's output schema, so a result that does not match shows up
// as a client_error step. Bounded: the whole run ends by itself after plan.timeout_ms.
import { readFile } from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

const plan = JSON.parse(await readFile(process.argv[2], "utf8"));
const deadline = setTimeout(() => {
  process.stderr.write(`ts_client: timed out after ${plan.timeout_ms} ms\n`);
  process.exit(3);
}, plan.timeout_ms);

const ACTIVE = new Set(["running", "awaiting_user"]);
const saved = {};
const report = { tools: [], steps: [], sampling_requests: 0, bad_progress: [] };
const bad_progress = report.bad_progress;

function fill(value) {
  if (typeof value === "string" && value.startsWith("$")) {
    const name = value.slice(1);
    if (!(name in saved)) throw new Error(`no saved value ${name}`);
    return saved[name];
  }
  if (Array.isArray(value)) return value.map(fill);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
  }
  return value;
}

function pick(data, path) {
  return path.split(".").reduce((node, key) => (node == null ? undefined : node[key]), data);
}

const client = new Client(
  { name: "cnki-mcp-ts-client-test", version: "0.0.0" },
  { capabilities: plan.sampling_reply ? { sampling: {} } : {} },
);
if (plan.sampling_reply) {
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    report.sampling_requests += 1;
    return {
      role: "assistant",
      content: { type: "text", text: plan.sampling_reply },
      model: "fake",
      stopReason: "endTurn",
    };
  });
}

const transport =
  plan.transport === "stdio"
    ? new StdioClientTransport({ command: plan.command, args: plan.args, env: plan.env, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(plan.url));

async function call(tool, args, step) {
  let progress = 0;
  let last = -1;
  const options = {
    timeout: 120000,
    onprogress: (p) => {
      progress += 1;
      // MCP: the value increases; a total, when given, is never passed
      if (p.progress <= last || (p.total !== undefined && p.progress > p.total)) bad_progress.push(p);
      last = p.progress;
    },
  };
  if (step.raw) {
    // a plain tools/call, so a JSON-RPC error can only have come from the server
    const result = await client.request(
      { method: "tools/call", params: { name: tool, arguments: args } },
      CallToolResultSchema,
      options,
    );
    return { result, progress };
  }
  const result = await client.callTool({ name: tool, arguments: args }, CallToolResultSchema, options);
  return { result, progress };
}

async function runStep(step) {
  const args = fill(step.args ?? {});
  const row = { tool: step.tool, expect: step.expect, progress: 0 };
  try {
    let { result, progress } = await call(step.tool, args, step);
    row.progress = progress;
    let data = result.structuredContent;
    // an operation still running: long-poll it (operation_status validates against its own schema)
    while (step.follow && !result.isError && data && ACTIVE.has(data.status) && data.operation_id) {
      ({ result } = await call("operation_status", { operation_id: data.operation_id, wait_seconds: 50 }, {}));
      data = result.structuredContent;
    }
    row.outcome = result.isError ? "error" : "ok";
    row.has_structured = data !== undefined && data !== null;
    row.status = data?.status;
    row.code = data?.code;
    for (const [name, path] of Object.entries(step.save ?? {})) saved[name] = pick(data, path);
  } catch (err) {
    if (err instanceof McpError && step.raw) {
      row.outcome = "jsonrpc_error";
      row.code = err.code;
    } else {
      row.outcome = "client_error";
      row.code = err?.code;
    }
    row.message = String(err?.message ?? err).slice(0, 500);
  }
  report.steps.push(row);
}

try {
  await client.connect(transport);
  report.server = client.getServerVersion();
  report.tools = (await client.listTools()).tools.map((t) => ({
    name: t.name,
    has_output_schema: Boolean(t.outputSchema),
  }));
  for (const step of plan.steps) await runStep(step);
} catch (err) {
  report.fatal = String(err?.stack ?? err).slice(0, 2000);
} finally {
  try {
    await client.close();
  } catch {
    // the server may already be gone; the report says what happened
  }
}
process.stdout.write(JSON.stringify(report) + "\n");
clearTimeout(deadline);
process.exit(report.fatal ? 2 : 0);
