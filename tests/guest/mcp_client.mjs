// An agent's side of `akts mcp`, written against the official TypeScript SDK
// (@modelcontextprotocol/sdk): it connects over stdio or Streamable HTTP, lists
// the tools (following nextCursor), calls every tool, sends the malformed calls
// an agent makes, reads the resources, and cancels a long call. It prints a
// transcript ("> tool args", "< result") as "# " lines and one verdict a line
// ("ok<TAB>what" / "not<TAB>what") for the guest test (t_mcp.sh); after a
// cancellation that stopped a running scenario, a line "CANCELLED<TAB>abort
// time in ms<TAB>the scenario's pids" for t_mcp.sh to follow.
//
//   node mcp_client.mjs stdio SOCKET [PAGE_SIZE]
//   node mcp_client.mjs http URL TOKEN_FILE
import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const [mode, where, extra] = process.argv.slice(2);
const verdict = (good, what) => console.log(`${good ? "ok" : "not"}\t${what}`);
const say = (line) => console.log(`# ${String(line).replace(/\n/g, " ").slice(0, 400)}`);
const short = (v) => JSON.stringify(v).slice(0, 300);

function transport() {
  if (mode === "stdio") {
    const args = ["mcp", "--socket", where];
    if (extra) args.push("--page-size", extra);
    return new StdioClientTransport({ command: "akts", args, stderr: "pipe" });
  }
  const token = readFileSync(extra, "utf8").trim();
  return new StreamableHTTPClientTransport(new URL(where), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
}

async function call(client, name, args, opts) {
  say(`> ${name} ${short(args)}`);
  const r = await client.callTool({ name, arguments: args }, undefined, opts);
  say(`< ${r.isError ? "isError " : ""}${r.isError ? r.content?.[0]?.text : short(r.structuredContent)}`);
  return r;
}

async function selected(client) {
  const s = await client.callTool({ name: "get_status", arguments: {} });
  return s.structuredContent.selected.slot;
}

// The programs of the run_workload scenarios (cyclictest, stress-ng and its workers) running now, pid -> name,
// from /proc: this client runs on the server's machine. Zombies run nothing and are left out.
function scenarioPrograms() {
  const out = new Map();
  for (const pid of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(pid)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;  // gone meanwhile
    }
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    if (/^(cyclictest|stress-ng)/.test(comm) && stat[close + 2] !== "Z") out.set(Number(pid), comm);
  }
  return out;
}
const programList = (programs) => [...programs].map(([pid, comm]) => `${comm} ${pid}`).join(", ") || "none";
const seconds = (ms) => (ms / 1000).toFixed(1);

async function main() {
  const t = transport();
  const client = new Client({ name: "akts-guest-test", version: "1.0.0" });
  await client.connect(t);
  const info = client.getServerVersion();
  verdict(info?.name === "akts", `${mode}: initialized with ${info?.name} ${info?.version}, protocol ${t.protocolVersion ?? "(stdio: negotiated in initialize)"}`);
  await client.ping();  // a failure throws: main() reports it (a ping during a long call is checked below)

  // Every page, following nextCursor.
  const tools = [];
  let cursor, pages = 0;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
    pages++;
  } while (cursor && pages < 20);
  const names = tools.map((x) => x.name);
  say(`tools over ${pages} page(s): ${names.join(", ")}`);
  const want = ["list_policies", "get_status", "get_telemetry", "switch_policy", "get_decision_history",
    "set_objective", "hold", "release", "run_workload", "admit_policy", "evict_policy", "get_parameters",
    "set_parameter", "hint"];
  verdict(want.every((n) => names.includes(n)) && tools.every((x) => x.outputSchema && x.description),
    `${mode}: tools/list over ${pages} page(s) has every tool, each with a description and an output schema`);
  if (extra && mode === "stdio") {  // the paging session only lists
    await client.close();
    return;
  }
  // The SDK validates structuredContent against the output schema of the tools of the last listing: all in one page.
  const one = await client.listTools();
  verdict(!one.nextCursor, `${mode}: one listing holds every tool (the SDK validates each result against its schema)`);

  // Every tool.
  const lp = await call(client, "list_policies", { docs: true });
  const latency = lp.structuredContent.policies.find((p) => p.name === "latency");
  verdict(!lp.isError && latency && latency.doc.includes("When to pick it") && latency.parameters[0]?.name === "slice" && latency.parameters[0]?.applies === "live",
    `${mode}: list_policies with each policy's documentation and parameters (${short(latency?.parameters)})`);
  const st = await call(client, "get_status", {});
  verdict(!st.isError && st.structuredContent.scheduler.attached === true, `${mode}: get_status: attached, selected ${st.structuredContent.selected.policy}`);
  const tel = await call(client, "get_telemetry", { last: 3 });
  verdict(!tel.isError && tel.structuredContent.windows.length >= 1, `${mode}: get_telemetry returned ${tel.structuredContent.windows?.length} windows`);
  const obj = await call(client, "set_objective", { goal: "keep the LC wait p99 under 20 ms" });
  verdict(!obj.isError && obj.structuredContent.objective.signal === "lc_wait_p99" && obj.structuredContent.objective.max_ms === 20,
    `${mode}: set_objective understood: ${obj.structuredContent?.objective?.describe}`);
  let sw = await call(client, "switch_policy", { target: "throughput" });
  verdict(!sw.isError && sw.structuredContent.policy === "throughput" && (await selected(client)) === 1, `${mode}: switch_policy by name`);
  sw = await call(client, "switch_policy", { target: 0 });
  verdict(!sw.isError && (await selected(client)) === 0, `${mode}: switch_policy by slot`);
  const hold = await call(client, "hold", { target: "latency", duration: "30s" });
  const refused = await call(client, "switch_policy", { target: "throughput" });
  verdict(!hold.isError && refused.isError && (await selected(client)) === 0, `${mode}: hold, then a switch is refused: ${refused.content[0].text}`);
  const rel = await call(client, "release", {});
  verdict(!rel.isError && rel.structuredContent.released === true, `${mode}: release`);
  const setp = await call(client, "set_parameter", { target: "throughput.slice", value: "5ms" });
  const gp = await call(client, "get_parameters", { target: "throughput" });
  const slice = gp.structuredContent?.policies?.[0]?.params?.find((q) => q.name === "slice");
  verdict(!setp.isError && setp.structuredContent.value === 5000000 && slice?.value === 5000000 && slice?.text === "5ms",
    `${mode}: set_parameter throughput.slice 5ms, get_parameters shows it (${short(slice)})`);
  await call(client, "set_parameter", { target: "throughput.slice", value: "20ms" });
  // A thread akts does not schedule (init, in partial mode): the daemon's own refusal comes back as a tool error.
  const hint = await call(client, "hint", { pid: 1, remaining: "30ms" });
  verdict(hint.isError && hint.content[0].text.includes("not scheduled by akts"),
    `${mode}: hint reaches the daemon, which refuses a thread it does not schedule: ${hint.content[0].text}`);
  const hist = await call(client, "get_decision_history", { limit: 10 });
  verdict(!hist.isError && hist.structuredContent.decisions.some((d) => d.action === "objective"),
    `${mode}: get_decision_history shows the objective change (${hist.structuredContent.decisions.length} decisions)`);
  const wl = await call(client, "run_workload", { scenario: "hackbench", seconds: 1 });
  verdict(!wl.isError && wl.structuredContent.metrics.seconds > 0, `${mode}: run_workload hackbench: ${short(wl.structuredContent?.metrics)} under ${wl.structuredContent?.policy}`);
  const again = await call(client, "list_policies", { docs: true });
  const rec = again.structuredContent.policies.find((p) => p.name === wl.structuredContent?.policy);
  verdict(wl.structuredContent?.recorded === true && rec?.results.some((r) => r.workload === "hackbench" && r.source === "run_workload"),
    `${mode}: the result is in the policy repository: list_policies shows ${short(rec?.results?.at(-1))}`);
  if (mode === "stdio") {  // the other scenarios once: their programs' output is read for real
    const wk = await call(client, "run_workload", { scenario: "wakeup_latency", seconds: 2 });
    const m = wk.structuredContent?.metrics;
    verdict(!wk.isError && m.lc_wakeup_us.max >= m.lc_wakeup_us.avg && m.be_bogo_ops_per_s > 0,
      `${mode}: run_workload wakeup_latency: ${short(m)}`);
    const cpu = await call(client, "run_workload", { scenario: "cpu_throughput", seconds: 1 });
    verdict(!cpu.isError && cpu.structuredContent.metrics.events_per_s > 0, `${mode}: run_workload cpu_throughput: ${short(cpu.structuredContent?.metrics)}`);
  }

  // Admission: a candidate the static gate refuses, then a hot-add and its eviction.
  if (mode === "stdio") {
    const bad = await call(client, "admit_policy", { object: "/akts/bpf/akts_ejector.bpf.o" });
    verdict(!bad.isError && bad.structuredContent.admitted === false && bad.structuredContent.refused_at === "static",
      `${mode}: admit_policy refuses ejector at the static gate: ${short(bad.structuredContent?.gates?.[0]?.findings?.find((f) => !f.ok))}`);
    const good = await call(client, "admit_policy", { object: "/akts/bpf/akts_hoarder.bpf.o", force_untested: true,
      description: "a test policy, never selected" });
    const listed = (await client.callTool({ name: "list_policies", arguments: {} })).structuredContent.policies;
    verdict(!good.isError && good.structuredContent.admitted === true && listed.some((p) => p.name === "hoarder"),
      `${mode}: admit_policy hot-adds hoarder into slot ${good.structuredContent?.slot} (gate 3 forced, said so: ${good.structuredContent?.gates?.find((g) => g.gate === "dynamic")?.forced})`);
    const ev = await call(client, "evict_policy", { target: "hoarder" });
    const after = (await client.callTool({ name: "list_policies", arguments: {} })).structuredContent.policies;
    verdict(!ev.isError && !after.some((p) => p.name === "hoarder"), `${mode}: evict_policy takes it out again`);
  }

  // What an agent gets wrong: each an isError result, nothing changed.
  const before = await selected(client);
  const bad = [
    ["switch_policy", { target: "0.3" }], ["switch_policy", { target: "-1" }], ["switch_policy", { target: "" }],
    ["switch_policy", { target: "I would pick the latency policy" }], ["switch_policy", { target: 7 }],
    ["switch_policy", { target: 0.5 }], ["switch_policy", { target: "latencé ✓" }], ["switch_policy", {}],
    ["switch_policy", { target: "latency", extra: true }], ["hold", { target: "latency", duration: "forever" }],
    ["set_objective", { goal: "0.3" }], ["set_objective", { goal: "make it fast" }],
    ["get_telemetry", { last: 0 }], ["get_decision_history", { limit: "ten" }],
    ["run_workload", { scenario: "rm -rf /" }], ["run_workload", { scenario: "hackbench", seconds: 600 }],
    ["admit_policy", {}], ["admit_policy", { object: "relative.o" }], ["evict_policy", { target: "latency" }],
    ["admit_policy", { source: '#include "/etc/shadow"\n' }],
    ["set_parameter", { target: "throughput.slice", value: "0.3" }],
    ["set_parameter", { target: "throughput.slice", value: "1s" }], ["set_parameter", { target: "throughput.nosuch", value: 1 }],
    ["set_parameter", { target: "throughput", value: "5ms" }],
  ];
  let allErrors = true;
  for (const [name, args] of bad) {
    const r = await call(client, name, args);
    allErrors = allErrors && r.isError === true;
  }
  const after = await selected(client);
  const held = (await client.callTool({ name: "get_status", arguments: {} })).structuredContent.reasoning.arbiter;
  verdict(allErrors && before === after, `${mode}: ${bad.length} malformed calls are isError results and the selection stays ${after} (arbiter ${short(held).slice(0, 120)})`);
  let unknown = "none";
  try {
    await client.callTool({ name: "rm_rf", arguments: {} });
  } catch (e) {
    unknown = e.code;
  }
  verdict(unknown === -32602, `${mode}: an unknown tool is a JSON-RPC invalid-params error (${unknown})`);

  // Resources.
  const res = await client.listResources();
  const uris = res.resources.map((r) => r.uri);
  const doc = await client.readResource({ uri: "akts://policies/latency" });
  const log = await client.readResource({ uri: "akts://decisions" });
  verdict(uris.includes("akts://policies/throughput") && doc.contents[0].text.includes("What it does") &&
    JSON.parse(log.contents[0].text).decisions.length > 0, `${mode}: resources: ${uris.join(", ")}`);
  let missing = "none";
  try {
    await client.readResource({ uri: "akts://policies/nope" });
  } catch (e) {
    missing = e.code;
  }
  verdict(missing === -32002, `${mode}: an unknown resource is an error (${missing})`);

  // Cancel a long call, told apart from a call that ends some other way (refused, failed, finished):
  //  - the call began: the scenario's programs run while the call is still pending (and a ping is answered
  //    meanwhile: calls run beside the session's other requests);
  //  - the agent aborts; the SDK sends notifications/cancelled and rejects the call with the abort's reason
  //    (an McpError RequestTimeout carrying our text), at once; an answer of the server's is none of these;
  //  - the server stops the programs within seconds, the session still open (closing it stops running calls
  //    too, so t_mcp.sh's look after the session cannot tell), where uncancelled they run `natural` seconds.
  const natural = 40;
  const reason = `the agent changed its mind (${mode} client ${process.pid})`;
  const already = scenarioPrograms();  // none expected; not counted as this call's
  const own = () => new Map([...scenarioPrograms()].filter(([pid]) => !already.has(pid)));
  const both = (programs) =>
    [...programs.values()].includes("cyclictest") && [...programs.values()].some((c) => c.startsWith("stress-ng"));
  const ac = new AbortController();
  const t0 = Date.now();
  let settled = null;  // {result} or {error}, and when
  const pending = call(client, "run_workload", { scenario: "wakeup_latency", seconds: natural }, { signal: ac.signal })
    .then((result) => ({ result }), (error) => ({ error }))
    .then((s) => (settled = { ...s, at: Date.now() }));
  let programs = own();
  while (!settled && !both(programs) && Date.now() - t0 < 25000) {
    await sleep(50);
    programs = own();
  }
  if (both(programs) && !settled) {
    const p0 = Date.now();
    let answered = "";
    try {
      await client.ping({ timeout: 10000 });
      answered = `in ${Date.now() - p0} ms`;
    } catch (e) {
      say(`ping during run_workload: ${e?.message ?? e}`);
    }
    verdict(answered !== "", `${mode}: a ping is answered ${answered || "(it was not)"} while run_workload runs`);
  }
  for (const [pid, comm] of own()) programs.set(pid, comm);  // stress-ng's workers, started since
  const endedBefore = settled;
  const abortAt = Date.now();
  ac.abort(reason);
  const s = await pending;
  const what = s.error ? String(s.error?.message ?? s.error)
    : `a result: ${s.result?.isError ? s.result.content?.[0]?.text : short(s.result?.structuredContent)}`;
  verdict(both(programs) && !endedBefore,
    `${mode}: run_workload wakeup_latency (${natural} s) began: its programs ran (${programList(programs)}) while the call ` +
    `was pending, and it was cancelled ${seconds(abortAt - t0)} s in` +
    (endedBefore ? `; but the call had ended ${seconds(endedBefore.at - t0)} s in, before the cancel, with ${what}` : ""));
  const byAbort = !endedBefore && s.error instanceof McpError && s.error.code === ErrorCode.RequestTimeout &&
    String(s.error.message).includes(reason);
  verdict(byAbort && s.at - abortAt < 1000,
    endedBefore ? `${mode}: the call ended by the cancellation (it ended before it: ${what})`
      : `${mode}: the call ended by the cancellation, ${s.at - abortAt} ms after the abort: ${what}`);
  // The programs seen stop, with the session open.
  let goneAt = null;
  while (programs.size && Date.now() - abortAt < 5000) {
    const now = scenarioPrograms();
    if (![...programs].some(([pid, comm]) => now.get(pid) === comm)) {
      goneAt = Date.now();
      break;
    }
    await sleep(50);
  }
  const left = [...scenarioPrograms()].filter(([pid, comm]) => programs.get(pid) === comm);
  verdict(goneAt !== null,
    goneAt !== null
      ? `${mode}: the cancelled scenario's programs stopped ${seconds(goneAt - abortAt)} s after the abort, the session still open (uncancelled: ${natural} s)`
      : `${mode}: the cancelled scenario's programs stop within 5 s of the abort, the session still open (seen: ${programList(programs)}; still running: ${programList(left)})`);
  await client.ping();  // the session is still good after the cancellation (a failure throws: main() reports it)
  if (programs.size) console.log(`CANCELLED\t${abortAt}\t${[...programs.keys()].join(" ")}`);
  if (mode === "http") await t.terminateSession();
  await client.close();
}

main().catch((e) => {
  verdict(false, `${mode}: the client failed: ${e?.stack ?? e}`.replace(/\n/g, " | "));
  process.exit(1);
});
