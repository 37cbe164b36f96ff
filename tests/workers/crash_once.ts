/**
 * A gateway thread (as main.ts serves one) that throws an uncaught error at its first ping (once
 * every thread listens) — once per flag file (`GATEWAY_TEST_CRASH_FLAG`): the thread that
 * removes the file crashes, the others and its replacement serve on; without the variable, none
 * does. For tests/workers_test.ts.
 */
import { PLUGINS } from "../../plugins/mod.ts";
import { PLATFORMS } from "../../plugins/platforms/mod.ts";
import { Formats } from "../../src/request/formats.ts";
import { NO_LOG, setAccessLogSink } from "../../src/ops/log.ts";
import { serveWorker } from "../../src/worker.ts";

setAccessLogSink(NO_LOG);
serveWorker(new Formats(PLUGINS, PLATFORMS));
addEventListener("message", (e) => {
  const flag = Deno.env.get("GATEWAY_TEST_CRASH_FLAG");
  if ((e as MessageEvent).data.t !== "ping" || !flag) return;
  try {
    Deno.removeSync(flag);
  } catch {
    return; // another thread crashed
  }
  throw new Error("crash test");
});
