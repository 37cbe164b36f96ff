/**
 * The platform building blocks in plugins/platforms/ against the platform mocks: the event-stream
 * codec agrees byte for byte with the mock's independent encoder and checks CRCs, the SigV4
 * signer's signatures pass the Bedrock mock's independent verifier, and the Google token source
 * mints one token for many concurrent callers and refreshes it ahead of expiry.
 */
import assert from "node:assert/strict";
import {
  encodeFrame,
  EventStreamError,
  type EventStreamFrame,
  eventStreamFrames,
  loadEventStreams,
} from "../plugins/platforms/event_stream.ts";
import { GoogleTokenError, GoogleTokenSource } from "../plugins/platforms/google_token.ts";
import { scrubSignatures, signAwsRequest } from "../plugins/platforms/sigv4.ts";
import { Secrets } from "../src/ops/secrets.ts";
import { BEDROCK_TEST_CREDENTIALS, startMockBedrock } from "./mock/bedrock.ts";
import { eventFrame, exceptionFrame } from "./mock/eventstream.ts";
import { startMockVertex } from "./mock/vertex.ts";

const USER = "Bonjour";

async function decodeAll(chunks: Uint8Array[]): Promise<EventStreamFrame[]> {
  const frames: EventStreamFrame[] = [];
  const body = ReadableStream.from(chunks).pipeThrough(eventStreamFrames());
  for await (const frame of body) frames.push(frame);
  return frames;
}

/** `bytes` cut into pieces of `size` (frame boundaries fall inside pieces). */
const cut = (bytes: Uint8Array, size: number) =>
  Array.from(
    { length: Math.ceil(bytes.length / size) },
    (_, i) => bytes.slice(i * size, (i + 1) * size),
  );

const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
};

Deno.test("event stream: frames cut at any byte decode to their headers and payload", async () => {
  const wire = concat(
    eventFrame("messageStart", { role: "assistant" }),
    eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "héllo" } }),
    exceptionFrame("throttlingException", { message: "Too many requests" }),
  );
  for (const size of [1, 7, 64, wire.length]) {
    const frames = await decodeAll(cut(wire, size));
    assert.deepEqual(frames.map((f) => f.headers[":event-type"] ?? f.headers[":exception-type"]), [
      "messageStart",
      "contentBlockDelta",
      "throttlingException",
    ]);
    assert.equal(frames[2].headers[":message-type"], "exception");
    const delta = JSON.parse(new TextDecoder().decode(frames[1].payload));
    assert.equal(delta.delta.text, "héllo");
  }
});

Deno.test("event stream: the encoder writes the bytes the mock's independent encoder writes", async () => {
  await loadEventStreams();
  const payload = new TextEncoder().encode(JSON.stringify({ bytes: btoa("{}") }));
  const headers = {
    ":event-type": "chunk",
    ":content-type": "application/json",
    ":message-type": "event",
  };
  assert.deepEqual(encodeFrame({ headers, payload }), eventFrame("chunk", { bytes: btoa("{}") }));
});

Deno.test("event stream: a bad message CRC, a bad prelude CRC and a truncated frame are errors", async () => {
  const frame = eventFrame("messageStop", { stopReason: "end_turn" });
  const badMessage = frame.slice();
  badMessage[badMessage.length - 1] ^= 1;
  const badPrelude = frame.slice();
  badPrelude[9] ^= 1;
  for (const bytes of [badMessage, badPrelude, frame.slice(0, -3)]) {
    await assert.rejects(decodeAll([bytes]), EventStreamError);
  }
});

const converseBody = JSON.stringify({ messages: [{ role: "user", content: [{ text: USER }] }] });

async function signedConverse(url: string, credentials = BEDROCK_TEST_CREDENTIALS) {
  const request = {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: converseBody,
  };
  const headers = await signAwsRequest(url, request, credentials, {
    region: "us-east-1",
    service: "bedrock",
  });
  return fetch(url, { ...request, headers });
}

Deno.test("sigv4: the signer's signatures pass the Bedrock mock's independent verifier", async (t) => {
  const mock = await startMockBedrock();
  try {
    const ids = [
      "anthropic.claude-sonnet-4-5-20250929-v1:0",
      "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude",
    ];
    for (const id of ids) {
      await t.step(id, async () => {
        const res = await signedConverse(`${mock.url}/model/${encodeURIComponent(id)}/converse`);
        assert.equal(res.status, 200, await res.clone().text());
        const out = await res.json();
        assert.equal(out.output.message.content[0].text, `Hello from converse mock: ${USER}`);
        assert.equal(
          mock.requests.at(-1)!.headers["x-amz-security-token"],
          BEDROCK_TEST_CREDENTIALS.sessionToken,
        );
      });
    }
    await t.step("a wrong secret is refused", async () => {
      const res = await signedConverse(`${mock.url}/model/m/converse`, {
        ...BEDROCK_TEST_CREDENTIALS,
        secretAccessKey: "wrong",
      });
      assert.equal(res.status, 403);
      assert.match(res.headers.get("x-amzn-errortype")!, /^InvalidSignatureException:/);
      await res.body?.cancel();
    });
  } finally {
    await mock.close();
  }
});

Deno.test("sigv4: a call's signature is scrubbed wherever AWS's texts quote it, and anywhere bare", async () => {
  const sent = await signAwsRequest(
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke",
    { method: "POST", headers: { "content-type": "application/json" }, body: "{}" },
    BEDROCK_TEST_CREDENTIALS,
    { region: "us-east-1", service: "bedrock" },
  );
  const authorization = sent.get("authorization")!;
  const own = authorization.match(/Signature=([0-9a-f]{64})/)![1];
  const other = "240c93ba3610c73bde4e52dd5a93dd61a80b3ba2871208d7365c9cc7032d5c6f";
  const hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  const quotes = [
    // IncompleteSignatureException quotes the header it received.
    `{"message":"'AKIA/20261128/us-east-1/bedrock/aws4_request' not a valid key=value pair ` +
    `(missing equal-sign) in Authorization header: '${authorization}'."}`,
    `in Authorization header: 'AWS4-HMAC-SHA256 Credential=AKIA/…, SignedHeaders=host, Signature=${other}'.`,
    // A presigned URL, S3's XML, a JSON member, and the call's own signature bare.
    `https://example.com/x?X-Amz-Signature=${other}&X-Amz-Date=1`,
    `<SignatureProvided>\n${other}\n</SignatureProvided>`,
    `{"signature": "${other}"}`,
    `a proxy says: ${own}.`,
  ];
  for (const text of quotes) {
    const out = scrubSignatures(text, sent);
    assert.ok(!out.includes(own) && !out.includes(other), out);
    assert.ok(out.includes("[redacted]"), out);
  }
  // A payload hash in the canonical request AWS quotes (InvalidSignatureException) is no secret.
  const canonical = `x-amz-date:20261128T000000Z\n\nhost;x-amz-date\n${hash}`;
  assert.equal(scrubSignatures(canonical, sent), canonical);
  assert.equal(scrubSignatures("plain", new Headers()), "plain");
});

Deno.test("google token source: concurrent callers share one token; it is refreshed once ahead of expiry, behind them", async () => {
  const mock = await startMockVertex({ expiresIn: 6 });
  const minted: string[] = [];
  const source = new GoogleTokenSource(mock.serviceAccount, { onToken: (t) => minted.push(t) });
  try {
    const first = await Promise.all(Array.from({ length: 20 }, () => source.token()));
    assert.equal(new Set(first).size, 1);
    assert.equal(mock.tokensIssued(), 1);
    // The token works on Vertex.
    const url =
      `${mock.url}/v1/projects/mock-project/locations/us-central1/publishers/google/models/gemini:generateContent`;
    const call = (token: string) =>
      fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: USER }] }] }),
      });
    const ok = await call(first[0]);
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    // From a quarter of the 6 s lifetime before expiry (4.5 s) to an eighth (5.25 s), 20 callers
    // still get the live token at once while one refresh runs behind them; from then on they
    // get the new one.
    await new Promise((r) => setTimeout(r, 4600));
    const early = await Promise.all(Array.from({ length: 20 }, () => source.token()));
    assert.deepEqual(new Set(early), new Set([first[0]]));
    await new Promise((r) => setTimeout(r, 800));
    const second = await Promise.all(Array.from({ length: 20 }, () => source.token()));
    assert.equal(new Set(second).size, 1);
    assert.notEqual(second[0], first[0]);
    assert.equal(mock.tokensIssued(), 2);
    assert.deepEqual(minted, [first[0], second[0]]);
    // Once expired, the old token is Google's 401 UNAUTHENTICATED.
    await new Promise((r) => setTimeout(r, 700));
    const expired = await call(first[0]);
    assert.equal(expired.status, 401);
    assert.equal((await expired.json()).error.status, "UNAUTHENTICATED");
  } finally {
    await mock.close();
  }
});

Deno.test("google token source: a failed early refresh fails nobody; a failed due refresh fails its callers", async () => {
  const mock = await startMockVertex({ expiresIn: 6 });
  const source = new GoogleTokenSource(mock.serviceAccount);
  const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    const first = await source.token();
    await wait(4600);
    mock.tokenEndpointDown = true;
    // Ahead of expiry: served the live token while the refresh behind them fails.
    const early = await Promise.all(Array.from({ length: 10 }, () => source.token()));
    assert.deepEqual(new Set(early), new Set([first]));
    await wait(800);
    // Too close to expiry: the callers wait for a refresh, and share its failure.
    const due = await Promise.allSettled(Array.from({ length: 10 }, () => source.token()));
    for (const d of due) {
      assert.equal(d.status, "rejected");
      assert.ok(d.reason instanceof GoogleTokenError);
      assert.equal(d.reason.message, "token endpoint answered 503: backend_error");
    }
    mock.tokenEndpointDown = false;
    const second = await source.token();
    assert.notEqual(second, first);
    assert.equal(mock.tokensIssued(), 2);
    // The endpoint was asked once ahead of expiry, once for the waiting callers, once now.
    assert.equal(mock.requests.filter((r) => r.path === "/token").length, 4);
  } finally {
    await mock.close();
  }
});

Deno.test("google token source: invalidate forces one refresh; an aborted caller leaves the others served", async () => {
  const mock = await startMockVertex();
  const source = new GoogleTokenSource(mock.serviceAccount);
  try {
    const token = await source.token();
    source.invalidate(token);
    source.invalidate(token);
    const gone = new AbortController();
    const waits = [source.token(gone.signal), source.token(), source.token()];
    gone.abort(new DOMException("client went away", "AbortError"));
    const [aborted, ...served] = await Promise.allSettled(waits);
    assert.equal(aborted.status, "rejected");
    assert.deepEqual(served.map((s) => s.status), ["fulfilled", "fulfilled"]);
    assert.equal(mock.tokensIssued(), 2);
  } finally {
    await mock.close();
  }
});

Deno.test("google token source: an assertion signed by another key is refused with Google's reason", async () => {
  const mock = await startMockVertex();
  const other = await startMockVertex();
  // The second mock's key, presented as the first mock's account.
  const source = new GoogleTokenSource({
    ...mock.serviceAccount,
    private_key: other.serviceAccount.private_key,
  });
  try {
    const error = await source.token().catch((e) => e);
    assert.ok(error instanceof GoogleTokenError);
    assert.equal(error.message, "token endpoint answered 400: Invalid JWT Signature.");
    assert.equal(mock.tokensIssued(), 0);
  } finally {
    await mock.close();
    await other.close();
  }
});

/** The error a Google token source gets from a token endpoint answering with `answer`. */
async function tokenErrorFrom(answer: (req: Request) => Promise<Response>): Promise<Error> {
  const mock = await startMockVertex();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, answer);
  const source = new GoogleTokenSource({
    ...mock.serviceAccount,
    token_uri: `http://127.0.0.1:${server.addr.port}/token`,
  });
  try {
    const error = await source.token().catch((e) => e);
    assert.ok(error instanceof GoogleTokenError, String(error));
    return error;
  } finally {
    await server.shutdown();
    await mock.close();
  }
}

Deno.test("google token source: a token endpoint's oversized answer is refused after 64 KiB, not read to the end", async () => {
  // 40 MB of valid JSON, made as it is read: what the endpoint sent is what the source pulled.
  const tokenBytes = 40 * 1024 * 1024;
  const chunk = new TextEncoder().encode("a".repeat(64 * 1024));
  let sent = 0;
  const error = await tokenErrorFrom(async (req) => {
    await req.body?.cancel();
    const parts = [`{"access_token":"`, `","expires_in":3600}`].map((t) =>
      new TextEncoder().encode(t)
    );
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = sent === 0 ? parts[0] : sent >= tokenBytes ? parts[1] : chunk;
        if (sent > tokenBytes) return controller.close();
        sent += next === parts[1] ? 1 : next.byteLength;
        controller.enqueue(next);
      },
    }, { highWaterMark: 0 });
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
  assert.equal(error.message, "token endpoint answered 200 with more than 65536 bytes");
  assert.ok(sent < 4 * 1024 * 1024, `${sent} bytes pulled of ${tokenBytes}`);
});

Deno.test("google token source: minted tokens are scrubbed, the current one and the one before it; older ones leave the set", async () => {
  const mock = await startMockVertex();
  const secrets = new Secrets(["sk-configured-key-1"]);
  const source = new GoogleTokenSource(mock.serviceAccount, { onToken: secrets.minted() });
  try {
    const tokens: string[] = [];
    for (let i = 0; i < 6; i++) {
      tokens.push(await source.token());
      source.invalidate(tokens.at(-1)!);
    }
    assert.equal(new Set(tokens).size, 6);
    const echoed = (t: string) =>
      secrets.scrub(`upstream said: ${t}`) === "upstream said: [redacted]";
    assert.deepEqual(tokens.map(echoed), [false, false, false, false, true, true]);
    assert.ok(echoed("sk-configured-key-1"), "configured keys stay");
    // However many are minted, two are held.
    for (let i = 0; i < 50; i++) {
      tokens.push(await source.token());
      source.invalidate(tokens.at(-1)!);
    }
    assert.deepEqual(tokens.slice(-3).map(echoed), [false, true, true]);
  } finally {
    await mock.close();
  }
});

Deno.test("google token source: a token endpoint quoting the signed assertion back does not pass it on", async () => {
  let assertion = "";
  const error = await tokenErrorFrom(async (req) => {
    assertion = new URLSearchParams(await req.text()).get("assertion") ?? "";
    const error_description = `Invalid JWT: ${assertion}`;
    return Response.json({ error: "invalid_grant", error_description }, { status: 400 });
  });
  assert.equal(error.message, "token endpoint answered 400: Invalid JWT: [redacted]");
  for (const part of assertion.split(".")) assert.ok(!error.message.includes(part.slice(0, 12)));
});
