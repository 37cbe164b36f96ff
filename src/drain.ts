/**
 * A gateway's graceful shutdown (SIGTERM/SIGINT; every thread of `workers` alike): unready first
 * (and new requests get 503) so health checks can move traffic away, then the listener closed and
 * in-flight streams given a bounded time to finish.
 */
import type { Gateway } from "./request/context.ts";

/** Seconds the endings of cut streams get to reach their clients after the grace ran out. */
const FLUSH_S = 1;

const sleep = (s: number) => new Promise((resolve) => setTimeout(resolve, s * 1000));

/** Drains `gw`'s `server`; resolves once nothing is left open (or was told to end). */
export async function drain(gw: Gateway, server: Deno.HttpServer): Promise<void> {
  const { config } = gw.live.current;
  gw.live.current.draining = true;
  await sleep(config.shutdown_delay_s);
  gw.closingSockets.abort();
  const drained = server.shutdown();
  await Promise.race([drained, sleep(config.shutdown_grace_s)]);
  // What is still open is told so: streams end with the interruption ending, WebSockets
  // close with 1001. A moment lets those endings reach the clients.
  gw.stopping.stop();
  await Promise.race([drained, sleep(FLUSH_S)]);
  await gw.providerModels.stop();
}
