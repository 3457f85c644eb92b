// client.mjs drives `tackle mcp serve` with the client of the official
// TypeScript MCP SDK (@modelcontextprotocol/sdk 1.x, pinned in
// testpeers/package.json), as an MCP client app would, for tackle's
// integration tests (integration/mcpserve_test.go). It prints one JSON object
// on stdout, the facts for the Go test to assert on; the server's stderr
// passes through to ours.
//
//   node client.mjs -- TACKLE mcp serve [ARG]...
//
// The environment names the rest: TACKLE_CLI is the tackle binary (the same
// daemon as the served one's), TACKLE_LATE_SERVER the command of a stdio MCP
// server (server-everything) to add while serving. The served session must
// have server-everything as "ev", with mcp__ev__echo and
// mcp__ev__trigger-long-running-operation allowed by rules and
// mcp__ev__get-sum and mcp__ev__get-env not (each asks).
//
// The script, in order:
//
//   - connects (declaring elicitation), lists the tools, calls ev__echo;
//   - lists the resources and reads the first one, lists the prompts and
//     gets ev__args-prompt;
//   - runs `$TACKLE_CLI mcp add --scope user late -- $TACKLE_LATE_SERVER
//     stdio` and waits for notifications/tools/list_changed with late's tools;
//   - calls ev__trigger-long-running-operation (20 s) with a progress token
//     and aborts it after its first progress notification (the SDK sends
//     notifications/cancelled);
//   - calls ev__get-sum: its permission prompt comes as an elicitation,
//     answered with the allow-once option;
//   - calls ev__get-env: the elicitation is left open while
//     `$TACKLE_CLI permissions answer ID allow` answers the prompt, and must
//     then be withdrawn (its request cancelled by the server, which may come
//     after the call's result: the script waits for it before it closes).
//
// A timeout guards against hangs only.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const run = promisify(execFile);
const sep = process.argv.indexOf("--");
const serverCmd = sep < 0 ? [] : process.argv.slice(sep + 1);
const cli = process.env.TACKLE_CLI;
const lateServer = process.env.TACKLE_LATE_SERVER;
if (serverCmd.length === 0 || !cli || !lateServer) {
  process.stderr.write("usage: TACKLE_CLI=... TACKLE_LATE_SERVER=... node client.mjs -- TACKLE mcp serve [ARG]...\n");
  process.exit(2);
}

const out = { elicitations: [] };
const start = Date.now();
const step = (name) => {
  out.step = name;
  process.stderr.write(`client.mjs: ${name} (${Date.now() - start} ms)\n`);
};
let printed = false;
function finish(code) {
  if (!printed) {
    printed = true;
    process.stdout.write(JSON.stringify(out) + "\n");
  }
  process.exitCode = code;
}
const guard = setTimeout(() => {
  out.error = `the script did not end within 90 s (at ${out.step})`;
  finish(1);
  process.exit(1);
}, 90_000);

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

// waitFor resolves once check() is true, re-checked at each poke() and
// every 100 ms, or rejects after ms.
function waiter() {
  const pokes = new Set();
  return {
    poke() {
      for (const p of pokes) p();
    },
    async until(what, ms, check) {
      const deadline = Date.now() + ms;
      for (;;) {
        if (await check()) return;
        if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
        await new Promise((resolve) => {
          const t = setTimeout(done, 100);
          function done() {
            clearTimeout(t);
            pokes.delete(done);
            resolve();
          }
          pokes.add(done);
        });
      }
    },
  };
}

// How the next elicitation is answered: "allow" (the allow-once option) or
// "elsewhere" (answer the prompt with the CLI, wait for the withdrawal).
let elicitPolicy = "allow";
// handlers are the elicitation handlers still running: the withdrawal of an
// elicitation (its notifications/cancelled) may come after the call's result.
const handlers = new Set();

const client = new Client(
  { name: "ts-sdk-client", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, (req, extra) => {
  const h = answerElicitation(req, extra).finally(() => handlers.delete(h));
  handlers.add(h);
  return h;
});
async function answerElicitation(req, extra) {
  const seen = {
    policy: elicitPolicy,
    message: req.params.message,
    schema: req.params.requestedSchema,
    aborted: false,
  };
  out.elicitations.push(seen);
  if (elicitPolicy === "allow") {
    seen.answer = "allow_once";
    return { action: "accept", content: { decision: "allow_once" } };
  }
  // Another tackle client answers first: the CLI.
  const { stdout } = await run(cli, ["permissions", "pending", "--json"]);
  const pending = JSON.parse(stdout).find((p) => p.tool === "mcp__ev__get-env");
  if (!pending) throw new Error(`no pending request of mcp__ev__get-env: ${stdout}`);
  seen.requestId = pending.id;
  const answered = await run(cli, ["permissions", "answer", pending.id, "allow"]);
  seen.cliAnswer = answered.stdout.trim();
  // tackle withdraws the elicitation (notifications/cancelled of this request).
  await new Promise((resolve) => {
    if (extra.signal.aborted) return resolve();
    const t = setTimeout(resolve, 15_000);
    extra.signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
  seen.aborted = extra.signal.aborted;
  seen.abortReason = extra.signal.aborted ? String(extra.signal.reason?.message ?? extra.signal.reason) : "";
  return { action: "decline" }; // late: the SDK does not send it once cancelled
}

const changes = waiter();
out.listChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  out.listChanged++;
  changes.poke();
});

const transport = new StdioClientTransport({
  command: serverCmd[0],
  args: serverCmd.slice(1),
  env: process.env,
  stderr: "inherit",
});

try {
  step("connect");
  await client.connect(transport);
  out.serverInfo = client.getServerVersion();
  out.capabilities = client.getServerCapabilities();

  step("tools");
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  const echo = await client.callTool({ name: "ev__echo", arguments: { message: "hello from the TypeScript SDK" } });
  out.echo = { isError: !!echo.isError, text: textOf(echo) };

  step("resources");
  const resources = (await client.listResources()).resources;
  out.resources = resources.map((r) => r.uri);
  if (resources.length > 0) {
    const read = await client.readResource({ uri: resources[0].uri });
    const c = read.contents[0] ?? {};
    out.read = { uri: c.uri, mimeType: c.mimeType, text: c.text ?? "", blobLength: (c.blob ?? "").length };
  }

  step("prompts");
  out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  const prompt = await client.getPrompt({ name: "ev__args-prompt", arguments: { city: "Lyon" } });
  out.prompt = prompt.messages.map((m) => m.content?.text ?? "").join("\n");

  step("list_changed");
  const before = out.listChanged;
  const added = await run(cli, ["mcp", "add", "--scope", "user", "late", "--", lateServer, "stdio"]);
  out.mcpAdd = added.stdout.trim();
  const addedAt = Date.now();
  await changes.until("list_changed with late__echo", 30_000, async () => {
    if (out.listChanged === before) return false;
    const names = (await client.listTools()).tools.map((t) => t.name);
    out.lateTools = names.filter((n) => n.startsWith("late__"));
    return names.includes("late__echo");
  });
  out.listChangedMs = Date.now() - addedAt;

  step("cancel");
  const abort = new AbortController();
  const progress = [];
  const firstProgress = waiter();
  const slow = client.callTool(
    { name: "ev__trigger-long-running-operation", arguments: { duration: 20, steps: 20 } },
    undefined,
    {
      signal: abort.signal,
      timeout: 60_000,
      onprogress: (p) => {
        progress.push(p);
        firstProgress.poke();
      },
    },
  );
  slow.catch(() => {}); // judged below
  await firstProgress.until("the first progress of the slow call", 30_000, () => progress.length > 0);
  abort.abort("the person pressed Esc");
  const cancelled = { progress: progress.length };
  try {
    const r = await slow;
    cancelled.result = textOf(r);
  } catch (err) {
    cancelled.error = String(err?.message ?? err);
  }
  out.cancel = cancelled;

  step("elicitation");
  elicitPolicy = "allow";
  const sum = await client.callTool({ name: "ev__get-sum", arguments: { a: 20, b: 22 } });
  out.sum = { isError: !!sum.isError, text: textOf(sum) };

  step("answered elsewhere");
  elicitPolicy = "elsewhere";
  const env = await client.callTool({ name: "ev__get-env", arguments: {} });
  out.env = { isError: !!env.isError, text: textOf(env).slice(0, 200) };
  await Promise.all(handlers); // the withdrawal, before the connection closes

  step("close");
  await client.close();
  clearTimeout(guard);
  finish(0);
} catch (err) {
  out.error = `${out.step}: ${err?.stack ?? err}`;
  clearTimeout(guard);
  try {
    await client.close();
  } catch {}
  finish(1);
}
