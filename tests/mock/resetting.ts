/**
 * A keep-alive provider on raw TCP that answers the first request of each connection (an
 * OpenAI chat completion) and closes the connection after reading any later one in full,
 * without answering: the fault a provider's idle-connection reaper or a crash causes. It counts
 * every request it read, so a test can compare that with the gateway's own count.
 */
export interface ResettingProvider {
  /** "http://127.0.0.1:PORT" */
  url: string;
  /** Requests read in full, answered or not. */
  received(): number;
  close(): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const COMPLETION = JSON.stringify({
  id: "chatcmpl-reset",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "ok" },
    finish_reason: "stop",
  }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});
const ANSWER = encoder.encode(
  "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: keep-alive\r\n" +
    `content-length: ${COMPLETION.length}\r\n\r\n${COMPLETION}`,
);

/** Reads one request (headers and a content-length body) off `conn`; false at its end. */
async function readRequest(conn: Deno.Conn, pending: { text: string }): Promise<boolean> {
  const buf = new Uint8Array(64 * 1024);
  while (true) {
    const end = pending.text.indexOf("\r\n\r\n");
    if (end >= 0) {
      const length = Number(pending.text.slice(0, end).match(/content-length: *(\d+)/i)?.[1] ?? 0);
      if (pending.text.length >= end + 4 + length) {
        pending.text = pending.text.slice(end + 4 + length);
        return true;
      }
    }
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return false;
    pending.text += decoder.decode(buf.subarray(0, n));
  }
}

export function startResettingProvider(): ResettingProvider {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const served = new Set<Promise<void>>();
  let received = 0;
  const serve = async (conn: Deno.Conn) => {
    const pending = { text: "" };
    let answered = 0;
    try {
      while (await readRequest(conn, pending)) {
        received++;
        if (answered++ > 0) break; // a reused connection: read, then closed unanswered
        await conn.write(ANSWER);
      }
    } catch {
      // the gateway went away first
    } finally {
      conns.delete(conn);
      try {
        conn.close();
      } catch {
        // already closed
      }
    }
  };
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      const p = serve(conn);
      served.add(p);
      p.finally(() => served.delete(p));
    }
  })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    received: () => received,
    async close() {
      listener.close();
      await accepting.catch(() => {});
      for (const c of conns) c.close();
      await Promise.all(served);
    },
  };
}
