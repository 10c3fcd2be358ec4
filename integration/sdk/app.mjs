// An application on the Claude Agent SDK, pointed at flower in the
// harness's place. sdk_test.go runs it once per case and reads
// what it prints: one JSON object per line, {"ev": …}, for every message
// the SDK gave the app and every callback the SDK called. The Go test makes
// the assertions; this script only behaves like an app.
//
// Environment: SDK_NODE_MODULES (the pinned SDK's node_modules), FLOWER_BIN
// (pathToClaudeCodeExecutable), SDK_CASE, SDK_CWD, SDK_RESUME (a session to
// resume), SDK_PROMPT (the first message, when not the default). Everything else in the environment reaches flower and the
// harness unchanged (the scripted API's address, FLOWER_*).
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const nm = process.env.SDK_NODE_MODULES;
const { query, createSdkMcpServer, tool } = await import(
  pathToFileURL(join(nm, "@anthropic-ai/claude-agent-sdk/sdk.mjs")).href
);
const { z } = await import(
  pathToFileURL(createRequire(join(nm, "noop.js")).resolve("zod")).href
);

const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const which = process.env.SDK_CASE;
const append = "APPEND-MARK-7f3c";

// Every case records the callbacks and the messages it gets.
const options = {
  pathToClaudeCodeExecutable: process.env.FLOWER_BIN,
  cwd: process.env.SDK_CWD,
  env: { ...process.env },
  systemPrompt: { type: "preset", preset: "claude_code", append },
  stderr: (data) => say({ ev: "stderr", data }),
  canUseTool: async (name, input, ctx) => {
    say({ ev: "canUseTool", tool: name, input });
    return { behavior: "allow", updatedInput: input };
  },
  hooks: {
    PreToolUse: [{ hooks: [async (input) => {
      say({ ev: "hook", event: "PreToolUse", session_id: input.session_id, tool: input.tool_name, input: input.tool_input });
      return {};
    }] }],
    UserPromptSubmit: [{ hooks: [async (input) => {
      say({ ev: "hook", event: "UserPromptSubmit", session_id: input.session_id, prompt: input.prompt });
      return {};
    }] }],
  },
};
if (process.env.SDK_RESUME) options.resume = process.env.SDK_RESUME;

if (which === "mcp") {
  options.allowedTools = ["mcp__probe__ping"];
  options.mcpServers = {
    probe: createSdkMcpServer({
      name: "probe",
      version: "1.0.0",
      tools: [tool("ping", "answers pong", { word: z.string() }, async (args) => {
        say({ ev: "mcp", args });
        return { content: [{ type: "text", text: "pong-" + args.word }] };
      })],
    }),
  };
}
if (which === "schema") {
  options.outputFormat = {
    type: "json_schema",
    schema: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
  };
}

// A prompt the app streams: the first message at once, a second one when
// the handoff starts (stream case), and the end of input once it has as
// many results as messages.
function streamed(wantSecond) {
  let results = 0;
  let wake = null;
  const events = [];
  const notify = (e) => { events.push(e); if (wake) { const w = wake; wake = null; w(); } };
  const next = async (pred) => {
    for (;;) {
      const i = events.findIndex(pred);
      if (i >= 0) return events.splice(i, 1)[0];
      await new Promise((r) => (wake = r));
    }
  };
  const user = (text) => ({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" });
  async function* gen() {
    yield user("FIRST-MSG: do the task");
    let sent = 1;
    if (wantSecond) {
      await next((e) => e === "writing");
      yield user("SECOND-MSG: and this too");
      sent = 2;
    }
    while (results < sent) { await next((e) => e === "result"); }
  }
  return { gen: gen(), seen: (m) => {
    if (m.type === "result") { results++; notify("result"); }
    if (m.type === "system" && m.subtype === "flower_handoff" && m.phase === "writing") notify("writing");
  } };
}

// The compact case: the first message, then, once its result is in, a
// /compact; the input ends with the second result.
function compacting() {
  let results = 0;
  let wake = null;
  const until = async (n) => { while (results < n) await new Promise((r) => (wake = r)); };
  const user = (text) => ({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" });
  async function* gen() {
    yield user("FIRST-MSG: do the task");
    await until(1);
    yield user("/compact");
    await until(2);
  }
  return { gen: gen(), seen: (m) => {
    if (m.type === "result") { results++; if (wake) { const w = wake; wake = null; w(); } }
  } };
}

let prompt = process.env.SDK_PROMPT || "FIRST-MSG: do the task";
let stream = null;
if (which === "stream" || which === "interrupt" || which === "interruptHandoff") {
  stream = streamed(which === "stream");
  prompt = stream.gen;
}
if (which === "compact") {
  stream = compacting();
  prompt = stream.gen;
}

const q = query({ prompt, options });
let firstSession = null;
let interrupted = false;
try {
  for await (const m of q) {
    say({ ev: "message", m });
    if (stream) stream.seen(m);
    if (m.type === "system" && m.subtype === "init" && firstSession === null) {
      firstSession = m.session_id;
      // A lasting setting, made in generation 1, that generation 2 must
      // have too.
      if (which === "stream") {
        q.setPermissionMode("acceptEdits").then(() => say({ ev: "permissionModeSet" }), (e) => say({ ev: "permissionModeError", message: String(e) }));
      }
    }
    // The interruptHandoff case interrupts while the handoff is written.
    if (which === "interruptHandoff" && !interrupted && m.type === "system" && m.subtype === "flower_handoff" && m.phase === "writing") {
      interrupted = true;
      q.interrupt().then(() => say({ ev: "interrupted" }), (e) => say({ ev: "interruptError", message: String(e) }));
    }
    // The interrupt case interrupts generation 2 while its tool runs.
    if (which === "interrupt" && !interrupted && m.type === "assistant" && m.session_id !== firstSession &&
        m.message.content.some((b) => b.type === "tool_use")) {
      interrupted = true;
      setTimeout(() => { q.interrupt().then(() => say({ ev: "interrupted" }), (e) => say({ ev: "interruptError", message: String(e) })); }, 300);
    }
  }
  say({ ev: "end" });
} catch (e) {
  say({ ev: "error", message: String(e && e.message || e) });
}
