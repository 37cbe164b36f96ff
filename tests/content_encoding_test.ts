/**
 * Compressed request bodies: gzip, deflate, br and zstd are decoded and relayed decoded (no
 * Content-Encoding upstream); the size limit counts decoded bytes, so a small bomb gets a 413;
 * an unknown coding gets a 415 naming it, a corrupt body a 400, each in the client's dialect.
 */
import assert from "node:assert/strict";
import * as zlib from "node:zlib";
import { MAX_BODY_BYTES } from "../src/kit/http.ts";
import { anthropicHeaders, bodies, type Harness, openaiHeaders, startHarness } from "./helpers.ts";

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
