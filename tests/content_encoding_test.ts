/**
 * Compressed request bodies: gzip, deflate, br and zstd are decoded and relayed decoded (no
 * Content-Encoding upstream); the size limit counts decoded bytes, so a small bomb gets a 413;
 * an unknown coding gets a 415 naming it, a corrupt body a 400, each in the client's dialect.
 */
import assert from "node:assert/strict";
import * as zlib from "node:zlib";
import { MAX_BODY_BYTES } from "../src/kit/http.ts";
import {
  anthropicHeaders,
  bodies,
  type Harness,
  KEY,
  openaiHeaders,
  startHarness,
} from "./helpers.ts";

const COMPRESS: Record<string, (bytes: Uint8Array) => Uint8Array<ArrayBuffer>> = {
  gzip: (b) => new Uint8Array(zlib.gzipSync(b)),
  deflate: (b) => new Uint8Array(zlib.deflateSync(b)),
  br: (b) => new Uint8Array(zlib.brotliCompressSync(b)),
  zstd: (b) => new Uint8Array(zlib.zstdCompressSync(b)),
};

const encode = (text: string) => new TextEncoder().encode(text);

function send(
  h: Harness,
  path: string,
  headers: Record<string, string>,
  encoding: string,
  body: BodyInit,
) {
  return fetch(h.url + path, {
    method: "POST",
    headers: { ...headers, "content-encoding": encoding },
    body,
  });
}

Deno.test("content-encoding: each coding is decoded and relayed decoded", async (t) => {
  const h = await startHarness();
  try {
    for (const [coding, compress] of Object.entries(COMPRESS)) {
      await t.step(`${coding}, relayed (passthrough)`, async () => {
        const text = JSON.stringify(bodies.responses(`pt-text-${coding}`));
        const res = await send(h, "/v1/responses", openaiHeaders(), coding, compress(encode(text)));
        assert.equal(res.status, 200, await res.clone().text());
        assert.equal((await res.json()).status, "completed");
        const sent = h.upstream.requests.at(-1)!;
        assert.equal(sent.body, text);
        assert.equal(sent.headers["content-encoding"], undefined);
      });
      await t.step(`${coding}, converted, chunked (no length)`, async () => {
        const text = JSON.stringify(bodies.messages("chat-text"));
        const bytes = compress(encode(text));
        const body = new ReadableStream({
          start(c) {
            c.enqueue(bytes.subarray(0, 5));
            c.enqueue(bytes.subarray(5));
            c.close();
          },
        });
        const res = await send(h, "/v1/messages", anthropicHeaders(), coding.toUpperCase(), body);
        assert.equal(res.status, 200, await res.clone().text());
        assert.equal((await res.json()).type, "message");
        assert.equal(h.upstream.requests.at(-1)!.json.messages[0].content, "hi there");
      });
    }
    for (const encoding of ["identity", "", " "]) {
      await t.step(
        `Content-Encoding ${JSON.stringify(encoding)}: no coding, read as sent`,
        async () => {
          const text = JSON.stringify(bodies.chat("chat-text"));
          const res = await send(h, "/v1/chat/completions", openaiHeaders(), encoding, text);
          assert.equal(res.status, 200, await res.clone().text());
          assert.equal((await res.json()).object, "chat.completion");
        },
      );
    }
  } finally {
    await h.close();
  }
});

Deno.test("content-encoding: a bomb stops at the limit with 413; bad codings are named", async (t) => {
  const h = await startHarness();
  try {
    const before = h.upstream.requests.length;
    for (const coding of ["gzip", "zstd"]) {
      await t.step(`${coding} bomb → 413`, async () => {
        // 64 MiB of text in a few dozen KiB: decoding must stop at the 32 MiB limit.
        const filler = "a".repeat(2 * MAX_BODY_BYTES);
        const bomb = COMPRESS[coding](encode(`{"model":"pt-text","input":"${filler}"}`));
        assert.ok(bomb.byteLength < 1024 * 1024);
        const res = await send(h, "/v1/responses", openaiHeaders(), coding, bomb);
        assert.equal(res.status, 413);
        const body = await res.json();
        assert.match(body.error.message, /request body exceeds 33554432 bytes/);
      });
    }
    await t.step("unknown coding → 415 in the client's dialect, naming it", async () => {
      const text = JSON.stringify(bodies.messages("msg-text"));
      const res = await send(h, "/v1/messages", anthropicHeaders(), "compress", text);
      assert.equal(res.status, 415);
      const body = await res.json();
      assert.equal(body.type, "error");
      assert.match(body.error.message, /Content-Encoding "compress" is not supported/);
      const long = await send(h, "/v1/messages", anthropicHeaders(), "x".repeat(60_000), text);
      assert.equal(long.status, 415);
      const message: string = (await long.json()).error.message;
      assert.ok(message.length < 400, `an unknown coding is quoted clipped (${message.length})`);
    });
    await t.step("a body that is not what its coding says → 400", async () => {
      const text = JSON.stringify(bodies.chat("chat-text"));
      const res = await send(h, "/v1/chat/completions", openaiHeaders(), "gzip", text);
      assert.equal(res.status, 400);
      assert.match((await res.json()).error.message, /request body is not valid gzip/);
    });
    assert.equal(h.upstream.requests.length, before, "nothing refused reaches the provider");
  } finally {
    await h.close();
  }
});

/**
 * A request body that sends nothing until `end()`: a server that answers before then did not
 * wait for it.
 */
function held() {
  const { promise, resolve } = Promise.withResolvers<void>();
  let ended = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      await promise;
      c.close();
    },
  });
  const end = () => {
    ended = true;
    resolve();
  };
  return { body, end, ended: () => ended };
}

Deno.test("content-encoding: more than two codings → 415 before a decoder is made or the body read", async (t) => {
  const h = await startHarness();
  try {
    const before = h.upstream.requests.length;
    const cases = [
      { label: "three", encoding: "zstd, zstd, zstd", headers: openaiHeaders() },
      // The red team's request: ten thousand decoders for one small body (+415 MB, 3 s).
      { label: "ten thousand", encoding: Array(10_000).fill("zstd").join(", "), headers: {} },
      { label: "mixed, uppercase", encoding: "GZIP, br,deflate", headers: anthropicHeaders() },
    ];
    for (const { label, encoding, headers } of cases) {
      await t.step(`${label} codings`, async () => {
        const { body: sent, end, ended } = held();
        // Before the fix the gateway waited for the body: the step failed at this deadline.
        const timer = setTimeout(end, 5_000);
        try {
          const res = await fetch(`${h.url}/v1/messages`, {
            method: "POST",
            headers: { ...anthropicHeaders(), ...headers, "content-encoding": encoding },
            body: sent,
          });
          assert.ok(!ended(), "answered while the body was still open");
          assert.equal(res.status, 415);
          const body = await res.json();
          assert.equal(body.type, "error", "Anthropic's envelope");
          assert.equal(
            body.error.message,
            "Content-Encoding lists more than 2 codings (the gateway decodes at most 2)",
          );
        } finally {
          clearTimeout(timer);
          end();
        }
      });
    }
    await t.step("in OpenAI's and Google's envelopes too", async () => {
      const text = JSON.stringify(bodies.chat("chat-text"));
      const chat = await send(h, "/v1/chat/completions", openaiHeaders(), "br, br, br", text);
      assert.equal(chat.status, 415);
      assert.match((await chat.json()).error.message, /more than 2 codings/);
      const gemini = await send(
        h,
        "/v1beta/models/gem-text:generateContent",
        { "x-goog-api-key": KEY, "content-type": "application/json" },
        "gzip,gzip,gzip",
        "{}",
      );
      assert.equal(gemini.status, 415);
      const error = (await gemini.json()).error;
      assert.equal(error.status, "INVALID_ARGUMENT");
      assert.match(error.message, /more than 2 codings/);
    });
    assert.equal(h.upstream.requests.length, before, "nothing refused reaches the provider");
    await t.step("two codings are decoded, the last applied first", async () => {
      const text = JSON.stringify(bodies.chat("chat-text"));
      const twice = COMPRESS.gzip(COMPRESS.br(encode(text)));
      const res = await send(h, "/v1/chat/completions", openaiHeaders(), "br, gzip", twice);
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(h.upstream.requests.at(-1)!.body, text);
      await res.body?.cancel();
    });
  } finally {
    await h.close();
  }
});

/** A zstd skippable frame: a valid frame that decodes to nothing. */
function skippableFrame(size: number): Uint8Array<ArrayBuffer> {
  const frame = new Uint8Array(8 + size);
  const view = new DataView(frame.buffer);
  view.setUint32(0, 0x184d2a50, true);
  view.setUint32(4, size, true);
  return frame;
}

Deno.test("content-encoding: the bytes as sent count too; a zstd window over 8 MiB is refused", async (t) => {
  const h = await startHarness();
  try {
    await t.step(
      "41 MiB of zstd that decode to nothing → 413, not a 400 once all is read",
      async () => {
        const frame = skippableFrame(1024 * 1024);
        let sent = 0;
        const body = new ReadableStream<Uint8Array>({
          pull(c) {
            // Ends on its own past the limit, so a gateway that reads on still answers.
            if (sent++ < 41) c.enqueue(frame);
            else c.close();
          },
        });
        const res = await send(h, "/v1/chat/completions", openaiHeaders(), "zstd", body);
        assert.equal(res.status, 413);
        assert.match((await res.json()).error.message, /request body exceeds 33554432 bytes/);
      },
    );
    await t.step("a frame asking for a 16 MiB window → 400 (RFC 9659: at most 8 MiB)", async () => {
      const text = JSON.stringify(bodies.chat("chat-text"));
      const c = zlib.constants;
      const wide = (log: number) =>
        new Uint8Array(zlib.zstdCompressSync(encode(text), {
          params: { [c.ZSTD_c_windowLog]: log, [c.ZSTD_c_contentSizeFlag]: 0 },
        }));
      const refused = await send(h, "/v1/chat/completions", openaiHeaders(), "zstd", wide(24));
      assert.equal(refused.status, 400);
      assert.match((await refused.json()).error.message, /request body is not valid zstd/);
      const ok = await send(h, "/v1/chat/completions", openaiHeaders(), "zstd", wide(23));
      assert.equal(ok.status, 200, await ok.clone().text());
      await ok.body?.cancel();
    });
  } finally {
    await h.close();
  }
});
