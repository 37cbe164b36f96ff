/**
 * What an operator sees at start-up (main.ts as a child process): a port in use is one line that
 * says how to change it and a non-zero exit, under `deno task dev`'s --watch too (which would
 * otherwise wait for an edit); the gateway's own pid is printed with the reload command, and that
 * command reloads it.
 */
import assert from "node:assert/strict";
import { spawnGateway } from "./process.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/** Runs `deno <args>` to its end (at most `timeoutMs`): exit code and stderr. */
async function run(args: string[], env: Record<string, string>, timeoutMs = 30_000) {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { NO_COLOR: "1", GATEWAY_API_KEYS: "sk-operator-test-key", METRICS_PORT: "off", ...env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const { code, stderr } = await child.output();
  clearTimeout(timer);
  return { code, stderr: new TextDecoder().decode(stderr) };
}

Deno.test("operator: an API port in use is one line naming the address and PORT / listen.port", async (t) => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = taken.addr.port;
  const line = `gateway: cannot listen on 127.0.0.1:${port}: the address is already in use ` +
    "(another gateway?); set PORT to another port (or listen.port in the config file)";
  try {
    await t.step("deno task start", async () => {
      const { code, stderr } = await run([
        "run",
        "--allow-net",
        "--allow-env",
        "--allow-read",
        MAIN,
      ], {
        PORT: String(port),
      });
      assert.equal(code, 2);
      assert.equal(stderr.trim(), line, "one line, no stack trace");
    });
    await t.step("deno task dev (--watch): ends instead of waiting for an edit", async () => {
      const { code, stderr } = await run(
        ["run", "--watch", "--allow-net", "--allow-env", "--allow-read", MAIN, "--dev"],
        { PORT: String(port) },
      );
      assert.notEqual(code, 0);
      assert.ok(stderr.includes(line), stderr);
      assert.doesNotMatch(stderr, /AddrInUse|Restarting on file change/);
    });
  } finally {
    taken.close();
  }
});

Deno.test("operator: the gateway prints its own pid with the reload command, which reloads it", async () => {
  const gw = await spawnGateway("main.ts", [], { GATEWAY_API_KEYS: "sk-operator-test-key" });
  try {
    const pid = gw.process.pid;
    await gw.stderrMatch(
      new RegExp(`gateway pid ${pid}; reload the config with: kill -HUP ${pid}\n`),
    );
    Deno.kill(pid, "SIGHUP");
    const [reload] = await gw.lines((l) => l.msg === "config_reload");
    assert.equal(reload.outcome, "applied");
  } finally {
    gw.process.kill("SIGTERM");
    await gw.output();
  }
});
