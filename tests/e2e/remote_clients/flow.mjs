// The official ACP TypeScript SDK's remote clients against `iaccode serve`, as an editor
// built on them would drive it (tests/e2e/test_remote_sdks.py runs this and checks the
// JSON it prints):
//
//   node flow.mjs URL TOKEN http|websocket WORKSPACE            the session flow
//   node flow.mjs URL TOKEN http|websocket WORKSPACE SESSION    load SESSION
//
// The session flow, on one connection: initialize, a session, a prompt, a prompt with a
// permission question (allowed once), a prompt cancelled after its first chunk, a second
// session with a prompt. Loading, on a new connection: initialize and session/load (the SDK
// opens that session's stream before its session/load, as the RFD's resume flow does).
import { client } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import WebSocket from "ws";

const [url, token, transport, workspace, toLoad] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };

function open() {
  return transport === "http"
    ? createHttpStream(url, { headers })
    : createWebSocketStream(url.replace(/^http/, "ws"), { headers, WebSocket });
}

function recorder() {
  const seen = { updates: {}, questions: [] };
  const app = client({ name: "ts-sdk-e2e" })
    .onNotification("session/update", ({ params }) => {
      (seen.updates[params.sessionId] ??= []).push(params.update);
    })
    .onRequest("session/request_permission", ({ params }) => {
      seen.questions.push(params);
      const option = params.options.find((o) => o.kind === "allow_once");
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    });
  return { app, seen };
}

const text = (t) => [{ type: "text", text: t }];
const chunks = (seen, id) =>
  (seen.updates[id] ?? []).filter((u) => u.sessionUpdate === "agent_message_chunk");

async function until(condition) {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function sessionFlow() {
  const { app, seen } = recorder();
  const results = await app.connectWith(open(), async (ctx) => {
    const init = await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const one = await ctx.request("session/new", { cwd: workspace, mcpServers: [] });
    const prompt = (session, words) =>
      ctx.request("session/prompt", { sessionId: session.sessionId, prompt: text(words) });
    const hello = await prompt(one, "hi");
    const write = await prompt(one, "write a file");
    const before = chunks(seen, one.sessionId).length;
    const long = prompt(one, "go on");
    await until(() => chunks(seen, one.sessionId).length > before);
    await ctx.notify("session/cancel", { sessionId: one.sessionId });
    const cancelled = await long;
    const two = await ctx.request("session/new", { cwd: workspace, mcpServers: [] });
    const other = await prompt(two, "and you?");
    return { init, one, hello, write, cancelled, two, other };
  });
  return { results, seen };
}

async function loadFlow() {
  const { app, seen } = recorder();
  const loaded = await app.connectWith(open(), async (ctx) => {
    await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const answer = await ctx.request("session/load", {
      sessionId: toLoad, cwd: workspace, mcpServers: [] });
    // The replay comes on the session's stream, the answer on the connection's: an editor
    // keeps the connection open and shows the replay as it lands; wait until it stops.
    let count = -1;
    while ((seen.updates[toLoad] ?? []).length !== count) {
      count = (seen.updates[toLoad] ?? []).length;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    return answer;
  });
  return { loaded, seen };
}

console.log(JSON.stringify(toLoad ? await loadFlow() : await sessionFlow()));
