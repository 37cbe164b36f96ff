/**
 * One gateway thread of `workers: N` (src/workers.ts starts them): a whole gateway serving the
 * shared port (`reusePort`), told its config, reloads and shutdown by the supervisor thread,
 * reporting its metrics to it, and counting limits and keeping answers in the supervisor's
 * stores when no Redis is configured (src/shared_stores.ts).
 */
import type { Formats } from "./request/formats.ts";
import type { Config } from "./config/config.ts";
import type { Gateway } from "./request/context.ts";
import { drain } from "./drain.ts";
import { setLogWorker } from "./ops/log.ts";
import { swapConfig } from "./reload.ts";
import { createGateway, createHandler } from "./server.ts";
import { inRedis } from "./config/redis_url.ts";
import { type Call, SharedConversationStore, SharedLimitStore } from "./state/shared_stores.ts";
import { SharedPins } from "./request/pins.ts";
import type { FromWorker, ToWorker } from "./worker_messages.ts";

/** Whether this code runs in a gateway thread rather than the process's main thread. */
export function inWorker(): boolean {
  return "WorkerGlobalScope" in globalThis;
}

// The worker's global scope, as far as this module uses it.
const scope = globalThis as unknown as {
  postMessage(message: FromWorker): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
  close(): void;
};

const post = (message: FromWorker) => scope.postMessage(message);

/** Serves as a gateway thread: waits for its start message, then for the supervisor's orders. */
export function serveWorker(formats: Formats): void {
  const replies = new Map<number, PromiseWithResolvers<unknown>>();
  let calls = 0;
  const call: Call = (store, op, args) => {
    const id = ++calls;
    const reply = Promise.withResolvers<unknown>();
    replies.set(id, reply);
    post({ t: "call", id, store, op, args });
    return reply.promise;
  };
  let gw: Gateway | undefined;
  let server: Deno.HttpServer | undefined;
  /** A reload that came while the gateway was still being built. */
  let reloaded: Config | undefined;
  scope.onmessage = async ({ data: m }) => {
    switch (m.t) {
      case "start": {
        setLogWorker(m.index);
        ({ gw, server } = await start(formats, m.config, m.port, m.builtInConfig, call));
        if (gw && reloaded) swap(gw, reloaded);
        return;
      }
      case "reply": {
        const reply = replies.get(m.id);
        replies.delete(m.id);
        if (m.error === undefined) reply?.resolve(m.value);
        else reply?.reject(new Error(m.error));
        return;
      }
      case "config":
        if (gw) swap(gw, m.config);
        else reloaded = m.config;
        return;
      case "metrics":
        post({ t: "metrics", id: m.id, snapshot: gw?.metrics.snapshot() ?? {} });
        return;
      case "ping":
        post({ t: "pong", snapshot: gw?.config.metrics ? gw.metrics.snapshot() : undefined });
        return;
      case "stop":
        if (gw && server) await drain(gw, server);
        post({ t: "stopped" });
        scope.close();
    }
  };
}

/** Swaps in a config the supervisor validated; a failure leaves this thread as it was, logged. */
function swap(gw: Gateway, config: Config): void {
  try {
    swapConfig(gw.live.current, config);
  } catch (e) {
    const error = gw.secrets.scrub(String(e));
    console.error(JSON.stringify({ level: "error", msg: "config swap failed", error }));
  }
}

/** The thread's gateway, listening on the shared port; `failed` told to the supervisor. */
async function start(
  formats: Formats,
  config: Config,
  port: number,
  builtInConfig: boolean,
  call: Call,
) {
  // Without Redis, limits and kept answers live in the supervisor, shared by every thread.
  const gw = await createGateway(config, formats, {
    builtInConfig,
    limitStore: inRedis(config.limits_store) ? undefined : new SharedLimitStore(call),
    conversationStore: config.response_store.enabled && !inRedis(config.response_store)
      ? new SharedConversationStore(call)
      : undefined,
    // A continuation may reach another thread than the hop that issued its token.
    pins: new SharedPins(call),
  });
  const { hostname } = config.listen;
  let server: Deno.HttpServer;
  try {
    server = Deno.serve({
      hostname,
      port,
      reusePort: true,
      onListen: (addr) => post({ t: "listening", hostname: addr.hostname, port: addr.port }),
    }, createHandler(gw));
  } catch (e) {
    const addrInUse = e instanceof Deno.errors.AddrInUse;
    post({ t: "failed", message: (e as Error).message, addrInUse });
    scope.close();
    return {};
  }
  gw.providerModels.start();
  return { gw, server };
}
