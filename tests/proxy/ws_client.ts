/**
 * A WebSocket client run as a subprocess by tests/proxy_test.ts, because `new WebSocket` has no
 * option for a custom CA: the parent runs it with `--cert <test CA file>` so `wss://` to the
 * test proxy verifies.
 *
 *   deno run --allow-net --cert ca.crt tests/proxy/ws_client.ts '<json WsClientJob>'
 *
 * Prints one JSON line per event (WsClientEvent) on stdout and exits 0 when it is done.
 */

export interface WsClientJob {
  url: string;
  headers?: Record<string, string>;
  /** Text frames to send once open, in order. */
  send?: string[];
  /** Close (1000) after a frame whose JSON `type` is one of these. */
  until?: string[];
  timeoutMs?: number;
}

export type WsClientEvent =
  | { event: "open"; protocol: string }
  | { event: "message"; data: string }
  | { event: "error"; message: string }
  | { event: "close"; code: number; reason: string; wasClean: boolean }
  | { event: "timeout" };

function emit(e: WsClientEvent): void {
  console.log(JSON.stringify(e));
}

async function main(job: WsClientJob): Promise<void> {
  const { promise: closed, resolve } = Promise.withResolvers<void>();
  // Deno extension: headers on the upgrade request (Authorization reaches the server).
  const ws = new WebSocket(job.url, { headers: job.headers ?? {} });
  const timer = setTimeout(() => {
    emit({ event: "timeout" });
    ws.close(1000, "timeout");
    resolve();
  }, job.timeoutMs ?? 15_000);

  ws.onopen = () => {
    emit({ event: "open", protocol: ws.protocol });
    for (const frame of job.send ?? []) ws.send(frame);
  };
  ws.onmessage = (ev) => {
    const data = typeof ev.data === "string" ? ev.data : "<binary>";
    emit({ event: "message", data });
    let type: unknown;
    try {
      type = JSON.parse(data)?.type;
    } catch { /* not JSON */ }
    if (typeof type === "string" && job.until?.includes(type)) ws.close(1000, "done");
  };
  ws.onerror = (ev) => {
    emit({ event: "error", message: (ev as ErrorEvent).message ?? String(ev) });
  };
  ws.onclose = (ev) => {
    emit({ event: "close", code: ev.code, reason: ev.reason, wasClean: ev.wasClean });
    resolve();
  };
  await closed;
  clearTimeout(timer);
}

if (import.meta.main) {
  await main(JSON.parse(Deno.args[0]) as WsClientJob);
}
