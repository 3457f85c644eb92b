// client.mjs drives an ACP agent (`tackle acp`) through one session with the
// client app of the official TypeScript SDK (@agentclientprotocol/sdk 2.x),
// for tackle's integration tests (integration/acp_test.go). It prints one
// JSON object on stdout, the facts for the Go test to assert on; the agent's
// stderr passes through to ours.
//
//   node client.mjs SETUP [--session ID] [--prompt TEXT]... [--answer POLICY] [--list] -- AGENT [ARG]...
//
// SETUP is how the session is opened: new (session/new), load (session/load
// of --session: the agent replays the conversation) or resume (session/resume
// of --session: no replay). Each --prompt is then sent as a session/prompt,
// one after another. --list also asks session/list for the working directory.
// --answer is how session/request_permission is answered:
//
//   allow_once, allow_always, reject_once  the option of that kind
//   unknown    an optionId the agent never offered
//   cancel     send session/cancel, then answer {outcome: "cancelled"}, as
//              the protocol asks of a client that cancels
//   elsewhere  answer it first with `$TACKLE_CLI permissions answer ID allow`
//              (another tackle client), wait for the agent's tool_call_update
//              that shows the call's outcome, then answer reject_once late,
//              written straight to the agent's stdin so that it reaches the
//              agent as it is, whatever the SDK makes of a request the agent
//              withdrew (with $/cancel_request)
//
// Each prompt's permission requests are answered before the next prompt is
// sent, so an answer is never cut off by the end of the connection.
//
// The output's wire is every line of both directions in the order this
// process saw them ({dir: "send"|"recv", line, ms since the start}), taken from the agent's raw
// stdout before the SDK parses it, so the test can check the framing and the
// order of notifications and responses. A timeout guards against hangs only.
import { spawn, execFile } from "node:child_process";
import { parseArgs } from "node:util";
import * as acp from "@agentclientprotocol/sdk";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    session: { type: "string" },
    prompt: { type: "string", multiple: true, default: [] },
    answer: { type: "string", default: "allow_once" },
    list: { type: "boolean", default: false },
  },
});
const [setup, ...agentCmd] = positionals;
if (!["new", "load", "resume"].includes(setup) || agentCmd.length === 0) {
  process.stderr.write("usage: node client.mjs new|load|resume [--session ID] [--prompt TEXT]... [--answer POLICY] [--list] -- AGENT [ARG]...\n");
  process.exit(2);
}

const out = { setup, wire: [], prompts: [], permissions: [] };
let printed = false;
function finish(code) {
  if (!printed) {
    printed = true;
    process.stdout.write(JSON.stringify(out) + "\n");
  }
  process.exitCode = code;
}

// The hang guard: a scenario that has not ended by now reports what it saw.
const guard = setTimeout(() => {
  out.error = "the scenario did not end within 90 s";
  child.kill("SIGKILL");
  finish(1);
  process.exit(1);
}, 90_000);

const child = spawn(agentCmd[0], agentCmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
child.on("error", (err) => {
  out.error = `starting ${agentCmd.join(" ")}: ${err.message}`;
  finish(1);
  process.exit(1);
});

// waiters are the predicates waitRecv waits on, checked at each line received.
const waiters = new Set();
function record(dir, line) {
  out.wire.push({ dir, line, ms: Math.round(performance.now()) });
  if (dir !== "recv") return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  for (const w of waiters) {
    if (w.pred(msg)) {
      waiters.delete(w);
      clearTimeout(w.timer);
      w.resolve(true);
    }
  }
}

// waitRecv resolves true at the first received message for which pred is
// true (including those already received), or false after ms.
function waitRecv(pred, ms) {
  for (const { dir, line } of out.wire) {
    if (dir !== "recv") continue;
    try {
      if (pred(JSON.parse(line))) return Promise.resolve(true);
    } catch {}
  }
  return new Promise((resolve) => {
    const w = { pred, resolve };
    w.timer = setTimeout(() => {
      if (waiters.delete(w)) resolve(false);
    }, ms);
    waiters.add(w);
  });
}

// lineSplitter calls onLine for each complete line of a byte stream; flush
// reports an unterminated tail.
function lineSplitter(onLine) {
  const dec = new TextDecoder();
  let buf = "";
  return {
    push(chunk) {
      buf += dec.decode(chunk, { stream: true });
      for (let i; (i = buf.indexOf("\n")) >= 0; ) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    },
    flush() {
      buf += dec.decode();
      if (buf !== "") onLine(buf, true);
      buf = "";
    },
  };
}

const recvLines = lineSplitter((line, unterminated) => {
  if (unterminated) out.unterminatedStdout = line;
  record("recv", line);
});
const sendLines = lineSplitter((line) => record("send", line));

// The SDK cancels input when the connection closes; the tap goes on
// recording what the agent writes after that.
let inputOpen = true;
const input = new ReadableStream({
  start(controller) {
    child.stdout.on("data", (chunk) => {
      recvLines.push(chunk);
      if (inputOpen) controller.enqueue(new Uint8Array(chunk));
    });
    child.stdout.on("end", () => {
      recvLines.flush();
      if (inputOpen) controller.close();
      inputOpen = false;
    });
    child.stdout.on("error", (err) => {
      if (inputOpen) controller.error(err);
      inputOpen = false;
    });
  },
  cancel() {
    inputOpen = false;
  },
});
const output = new WritableStream({
  write(chunk) {
    sendLines.push(chunk);
    return new Promise((resolve, reject) => child.stdin.write(chunk, (err) => (err ? reject(err) : resolve())));
  },
  close() {
    child.stdin.end();
  },
});
child.stdin.on("error", () => {}); // EPIPE when the agent has gone: the exit status tells

function run(file, args) {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

const isOutcome = (callId) => (m) =>
  m.method === "session/update" &&
  m.params?.update?.sessionUpdate === "tool_call_update" &&
  m.params.update.toolCallId === callId &&
  ["completed", "failed"].includes(m.params.update.status);

let sessionId;

// answering holds the permission answers not yet written.
const answering = new Set();

function onPermission(ctx) {
  const p = answerPermission(ctx);
  const settled = p.then((r) => r.written, () => {});
  answering.add(settled);
  settled.then(() => answering.delete(settled));
  return p.then((r) => r.reply);
}

async function answerPermission({ params, agent, requestId }) {
  const rec = { request: params, requestId };
  out.permissions.push(rec);
  const option = (kind) => params.options.find((o) => o.kind === kind)?.optionId;
  let answer;
  switch (opts.answer) {
    case "allow_once":
    case "allow_always":
    case "reject_once": {
      const id = option(opts.answer);
      answer = id ? { outcome: "selected", optionId: id } : { outcome: "cancelled" };
      if (!id) rec.error = `no ${opts.answer} option offered`;
      break;
    }
    case "unknown":
      answer = { outcome: "selected", optionId: "no-such-option" };
      break;
    case "cancel":
      await agent.notify("session/cancel", { sessionId: params.sessionId });
      answer = { outcome: "cancelled" };
      break;
    case "elsewhere": {
      const cli = process.env.TACKLE_CLI;
      if (!cli) {
        rec.error = "--answer elsewhere needs $TACKLE_CLI, the tackle command";
        throw new Error(rec.error);
      }
      const pending = await run(cli, ["permissions", "pending", "--json"]);
      rec.pending = pending;
      let reqs = [];
      try {
        reqs = JSON.parse(pending.stdout);
      } catch {}
      rec.elsewhere = reqs[0] ? await run(cli, ["permissions", "answer", reqs[0].id, "allow"]) : { code: -1, stderr: "no pending request" };
      rec.outcomeShownBeforeLateAnswer = await waitRecv(isOutcome(params.toolCall.toolCallId), 30_000);
      const id = option("reject_once");
      rec.answer = id ? { outcome: "selected", optionId: id } : { outcome: "cancelled" };
      const line = JSON.stringify({ jsonrpc: "2.0", id: requestId, result: { outcome: rec.answer } });
      record("send", line);
      const written = new Promise((resolve) => child.stdin.write(line + "\n", () => resolve()));
      // The SDK's own reply never comes: the answer above is the only one.
      return { written, reply: new Promise(() => {}) };
    }
    default:
      throw new Error(`unknown --answer ${opts.answer}`);
  }
  rec.answer = answer;
  return { written: Promise.resolve(), reply: { outcome: answer } };
}

const app = acp
  .client({ name: "tackle-test" })
  .onRequest("session/request_permission", onPermission)
  .onNotification("session/update", () => {}); // the wire is the record

try {
  await app.connectWith(acp.ndJsonStream(output, input), async (ctx) => {
    out.initialize = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
      clientInfo: { name: "tackle-test", version: "0" },
    });
    const cwd = process.cwd();
    if (opts.list) out.list = await ctx.request("session/list", { cwd });
    if (setup === "new") {
      out.session = await ctx.request("session/new", { cwd, mcpServers: [] });
      sessionId = out.session.sessionId;
    } else {
      sessionId = opts.session;
      out.session = (await ctx.request(`session/${setup}`, { sessionId, cwd, mcpServers: [] })) ?? {};
    }
    out.sessionId = sessionId;
    for (const text of opts.prompt) {
      const p = { text };
      out.prompts.push(p);
      try {
        p.response = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
      } catch (err) {
        p.error = { message: err.message, code: err.code, data: err.data };
      }
      await Promise.all(answering);
    }
  });
} catch (err) {
  out.error = `${err.message}${err.code !== undefined ? ` (code ${err.code})` : ""}`;
}

// The agent should exit when its stdin ends.
child.stdin.end();
const timer = setTimeout(() => {
  out.exitTimeout = true;
  child.kill("SIGKILL");
}, 15_000);
out.exit = await exited;
clearTimeout(timer);
clearTimeout(guard);
finish(out.error ? 1 : 0);
