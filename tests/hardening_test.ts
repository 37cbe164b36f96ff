/**
 * Security and fault hardening beyond the HTTP matrix (tests/faults_test.ts): real SDKs on
 * faulty upstreams, the key-echo check over WebSockets, model names that try to steer a URL,
 * WebSocket limits, and who is trusted to name the client's address.
 */
import assert from "node:assert/strict";
import { checkFormats, validateConfig } from "../src/config/config.ts";
import { TrustedProxies } from "../src/config/trusted_proxies.ts";
import {
  anthropicHeaders,
  bodies,
  FORMATS,
  googleHeaders,
  type Harness,
  INGRESS,
  KEY,
  MOCK_PROVIDERS,
  mockConfig,
  openaiHeaders,
  post,
  PROVIDER_KEY,
  startHarness,
  wsExchange,
} from "./helpers.ts";
import { Anthropic, ApiError, GoogleGenAI, OpenAI } from "./sdk/deps.ts";

const TIMEOUTS = { first_byte_ms: 400, idle_ms: 400 };
/** Faults after which a stream must end in an error the SDK raises. */
const STREAM_FAULTS = ["cutmid", "closemid", "badjson", "stall"];
/**
 * An event whose JSON is broken inside: an error the SDK raises where the stream is converted (a
 * relayed one passes it on as the provider sent it, docs/security-and-faults.md).
 */
const CONVERTED_FAULTS = ["garbled"];

/** Whatever a streaming SDK call ends with: the error it raised, or its text. */
async function outcome(
  run: () => AsyncIterable<unknown> | Promise<AsyncIterable<unknown>>,
): Promise<Error | "success"> {
  try {
    for await (const _ of await run()) { /* drain */ }
    return "success";
  } catch (e) {
    return e as Error;
  }
}

function assertTypedFailure(got: Error | "success", label: string) {
  assert.notEqual(got, "success", `${label}: the SDK reported success`);
  const e = got as Error;
  assert.ok(!(e instanceof SyntaxError), `${label}: SyntaxError ${e.message}`);
  assert.ok(!String(e.message).includes(PROVIDER_KEY), `${label}: key in the error`);
}

const messages = [{ role: "user" as const, content: "hi" }];

/** Each SDK's streaming call and its non-streaming call's typed error class. */
function clients(h: Harness) {
  const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
  const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
  const genai = new GoogleGenAI({ apiKey: KEY, httpOptions: { baseUrl: h.url } });
  return {
    "openai chat": {
      wire: "chat",
      stream: (model: string) => openai.chat.completions.stream({ model, messages, stream: true }),
      create: (model: string) => openai.chat.completions.create({ model, messages }),
      typed: OpenAI.APIError,
    },
    "openai responses": {
      wire: "responses",
      stream: (model: string) => openai.responses.stream({ model, input: "hi" }),
      create: (model: string) => openai.responses.create({ model, input: "hi" }),
      typed: OpenAI.APIError,
    },
    anthropic: {
      wire: "messages",
      stream: (model: string) => anthropic.messages.stream({ model, max_tokens: 50, messages }),
      create: (model: string) => anthropic.messages.create({ model, max_tokens: 50, messages }),
      typed: Anthropic.APIError,
    },
    genai: {
      wire: "generate-content",
      stream: (model: string) => genai.models.generateContentStream({ model, contents: "hi" }),
      create: (model: string) => genai.models.generateContent({ model, contents: "hi" }),
      typed: ApiError,
    },
  };
}

type Sdk = keyof ReturnType<typeof clients>;

async function sdkFaults(t: Deno.TestContext, sdks: Sdk[]) {
  const h = await startHarness({ timeouts: TIMEOUTS });
  const all = clients(h);
  try {
    for (const { prefix: p, api } of MOCK_PROVIDERS) {
      await t.step(
        `${p}: ${STREAM_FAULTS.join(", ")}, garbled where converted, and an HTML 502`,
        async () => {
          for (const name of sdks) {
            const sdk = all[name];
            const converted = sdk.wire === api ? [] : CONVERTED_FAULTS;
            for (const fault of [...STREAM_FAULTS, ...converted]) {
              const label = `${name} ${p}-${fault}`;
              assertTypedFailure(await outcome(() => sdk.stream(`${p}-${fault}`)), label);
            }
            const e = await sdk.create(`${p}-err502htmlecho`).then(() => "success", (e) => e);
            assert.ok(e instanceof sdk.typed && e.status === 502, `${name}: ${e}`);
            assert.ok(!String(e.message).includes(PROVIDER_KEY));
          }
        },
      );
    }
  } finally {
    await h.close();
  }
}

Deno.test("faults: real SDKs raise the interruption or a typed API error", (t) =>
  sdkFaults(t, ["openai chat", "openai responses", "anthropic"]));

Deno.test({
  name: "faults: @google/genai raises the interruption or a typed API error",
  // js-genai throws on an in-stream error without cancelling the response body it was reading,
  // which the resource sanitizer reports as the test's leak (as in tests/sdk/genai.ts).
  sanitizeResources: false,
}, (t) => sdkFaults(t, ["genai"]));

Deno.test("keys: an echoed provider key never reaches a WebSocket client or the log", async () => {
  const h = await startHarness({ timeouts: TIMEOUTS });
  try {
    const frames = [
      // Passthrough: the provider's own error frame; converted: an HTTP error re-wrapped.
      { type: "response.create", model: "pt-err429echo", input: "hi" },
      { type: "response.create", model: "chat-err400echo", input: "hi" },
      { type: "response.create", model: "msg-errevent-echo", input: "hi" },
    ];
    const passthrough = await wsExchange(h.url, [frames[0]]);
    const converted = await wsExchange(h.url, frames.slice(1));
    const seen = JSON.stringify([passthrough, converted]);
    assert.equal(passthrough.length + converted.length, 3, seen);
    assert.ok(seen.includes("Incorrect API key provided: [redacted]"), seen);
    assert.ok(!seen.includes(PROVIDER_KEY), seen);
    assert.ok(!JSON.stringify(h.logs).includes(PROVIDER_KEY), "key in the access log");
  } finally {
    await h.close();
  }
});

/** Model names that would change the upstream URL if pasted into it. */
const HOSTILE = [
  "gem-x/../../../v1beta/cachedContents#",
  "gem-ok:countTokens?x=",
  "gem-a/upload/v1beta/files?",
  "gem-a%2F..%2Fb",
  "gem-a b",
  "gem-a\\b",
  "gem-..",
  "gem-a\nb",
];

Deno.test("model names: none steers an upstream URL, on any endpoint or route kind", async (t) => {
  const h = await startHarness();
  const sent = () => h.upstream.requests.length;
  try {
    for (const model of HOSTILE) {
      await t.step(JSON.stringify(model), async () => {
        const before = sent();
        // Every format whose body names the model (a path that names it is the step below).
        const calls = [
          ...INGRESS.filter((c) => !c.path("MODEL", false).includes("MODEL"))
            .flatMap((c) =>
              [false, true].map((stream) =>
                post(h.url + c.path(model, stream), c.headers, c.body(model, stream))
              )
            ),
          post(`${h.url}/v1/embeddings`, openaiHeaders(), { model, input: ["hi", "there"] }),
        ];
        for (const res of await Promise.all(calls)) {
          const body = await res.json();
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.match(JSON.stringify(body), /model/);
        }
        const ws = await wsExchange(h.url, [{ type: "response.create", model, input: "hi" }]);
        assert.equal(ws[0].at(-1)!.type, "error");
        assert.equal((ws[0].at(-1)!.error as Record<string, unknown>).param, "model");
        assert.equal(sent(), before, "nothing went upstream");
      });
    }
    await t.step("the Gemini endpoint's own path keeps its strict charset", async () => {
      for (const model of ["gem-a%2F..%2Fb", "gem-a%3AcountTokens"]) {
        const res = await post(
          `${h.url}/v1beta/models/${model}:generateContent`,
          googleHeaders(),
          bodies.gemini(),
        );
        const body = await res.json();
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(body.error.status, "INVALID_ARGUMENT");
      }
    });
    await t.step("real ids with `:` and `@` still reach body-addressed providers", async () => {
      const before = sent();
      for (const model of ["msg-anthropic.claude-sonnet-4-5-v1:0", "chat-x@001"]) {
        const c = model.startsWith("msg") ? bodies.messages(model) : bodies.chat(model);
        const headers = model.startsWith("msg") ? anthropicHeaders() : openaiHeaders();
        const path = model.startsWith("msg") ? "/v1/messages" : "/v1/chat/completions";
        const res = await post(h.url + path, headers, c);
        assert.equal(res.status, 200, await res.text());
      }
      assert.equal(sent(), before + 2);
    });
    await t.step("a route rename into a Gemini URL is checked at startup", async () => {
      const config = await mockConfig(h.upstream.url);
      const doc = {
        ...config,
        routes: [{ models: ["x-*"], provider: "gemini", model: "a/../b" }],
      };
      assert.throws(
        () => checkFormats(validateConfig(doc), FORMATS),
        /routes\[0\]\.model: cannot be sent in a Gemini URL/,
      );
    });
  } finally {
    await h.close();
  }
});

Deno.test("websocket: a message over max_message_bytes gets an error and close 1009", async () => {
  const h = await startHarness();
  try {
    const ws = new WebSocket(h.url.replace("http", "ws") + "/v1/responses", {
      headers: { authorization: `Bearer ${KEY}` },
    });
    const events: Record<string, unknown>[] = [];
    const closed = new Promise<CloseEvent>((resolve) => ws.onclose = resolve);
    ws.onmessage = (e) => events.push(JSON.parse(e.data));
    await new Promise((resolve) => ws.onopen = resolve);
    ws.send(
      JSON.stringify({ type: "response.create", model: "chat-text", input: "x".repeat(17e6) }),
    );
    const close = await closed;
    assert.equal(close.code, 1009);
    assert.equal(events[0]?.type, "error");
    assert.match(JSON.stringify(events[0]), /max_message_bytes/);
  } finally {
    await h.close();
  }
});

Deno.test("trusted_proxies: X-Forwarded-For is believed only from them, read from the right", () => {
  const kong = new TrustedProxies(["10.0.0.0/8", "::1", "fd00::/8"]);
  assert.equal(kong.clientIp("10.1.2.3", "203.0.113.7"), "203.0.113.7");
  assert.equal(kong.clientIp("10.1.2.3", "6.6.6.6, 203.0.113.7"), "203.0.113.7", "forged hop");
  assert.equal(kong.clientIp("10.1.2.3", "203.0.113.7, 10.9.9.9"), "203.0.113.7", "two proxies");
  assert.equal(kong.clientIp("198.51.100.1", "203.0.113.7"), "198.51.100.1", "untrusted peer");
  assert.equal(kong.clientIp("::ffff:10.0.0.5", "2001:db8::1"), "2001:db8::1", "mapped IPv4");
  assert.equal(kong.clientIp("fd12::1", "garbage"), "fd12::1", "an unreadable hop is not believed");
  assert.equal(kong.clientIp("::1", null), "::1");
  assert.throws(
    () =>
      validateConfig({
        keys: [{ name: "a", key: "k".repeat(10) }],
        providers: [{ name: "demo", api: "demo" }],
        routes: [{ models: ["*"], provider: "demo" }],
        trusted_proxies: ["10.0.0.0/33"],
      }),
    /trusted_proxies\[0\]: expected an IP address or CIDR/,
  );
});
