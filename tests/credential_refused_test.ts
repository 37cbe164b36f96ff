/**
 * A provider that refuses the gateway's own credential (401/403 once no pool key is left) is a
 * 502 naming the provider, in the client's dialect, relayed and converted alike: the client's
 * SDK must not tell its user that their key is wrong. The log names each refused key by index.
 */
import assert from "node:assert/strict";
import {
  anthropicHeaders,
  bodies,
  googleHeaders,
  type Harness,
  KEY,
  openaiHeaders,
  post,
  startHarness,
} from "./helpers.ts";
import { Anthropic, OpenAI } from "./sdk/deps.ts";

const REVOKED = ["sk-revoked-pool-0001", "sk-revoked-pool-0002"];

const withPool = () =>
  startHarness({
    tweak: (c) => {
      const oai = c.providers.find((p) => p.name === "anthropic")!;
      c.providers.push({ ...oai, name: "pool", api_key: undefined, api_keys: REVOKED });
      c.routes.unshift({
        models: ["cred-pool"],
        provider: "pool",
        model: "msg-keyerr401",
        passthrough: false,
      });
    },
  });

async function refused(res: Response, provider: string, status: number) {
  const text = await res.text();
  assert.equal(res.status, 502, text);
  assert.ok(!/incorrect api key|invalid x-api-key|invalid api key/i.test(text), text);
  const body = JSON.parse(text);
  const message = body.error.message;
  assert.equal(
    message,
    `provider \`${provider}\` rejected the gateway's credential (HTTP ${status})`,
  );
  return body;
}

Deno.test("credential refused: 502 naming the provider, relayed and converted", async (t) => {
  const h: Harness = await withPool();
  try {
    await t.step(
      "relayed Responses (passthrough), plain and streamed → OpenAI envelope",
      async () => {
        for (const stream of [false, true]) {
          const res = await post(
            h.url + "/v1/responses",
            openaiHeaders(),
            bodies.responses("pt-err401", stream),
          );
          const body = await refused(res, "oai", 401);
          assert.equal(body.error.type, "server_error");
          assert.equal(res.headers.get("x-gateway-provider"), "oai");
        }
      },
    );
    await t.step("relayed Messages, 403 → Anthropic envelope", async () => {
      const res = await post(
        h.url + "/v1/messages",
        anthropicHeaders(),
        bodies.messages("msg-err403"),
      );
      const body = await refused(res, "anthropic", 403);
      assert.equal(body.type, "error");
    });
    await t.step("converted: chat → messages, Gemini → chat", async () => {
      const chat = await post(
        h.url + "/v1/chat/completions",
        openaiHeaders(),
        bodies.chat("msg-err401"),
      );
      await refused(chat, "anthropic", 401);
      const gem = await post(
        h.url + "/v1beta/models/chat-err401:generateContent",
        googleHeaders(),
        bodies.gemini(),
      );
      const body = await refused(gem, "oai-chat", 401);
      assert.equal(body.error.code, 502);
    });
    await t.step("the SDKs raise a server error, not an authentication error", async () => {
      const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
      const a = await anthropic.messages.create({
        model: "msg-err401",
        max_tokens: 100,
        messages: [{ role: "user", content: "hi" }],
      }).catch((e) => e);
      assert.ok(a instanceof Anthropic.InternalServerError && a.status === 502, String(a));
      assert.ok(!(a instanceof Anthropic.AuthenticationError));
      const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: KEY, maxRetries: 0 });
      const o = await openai.responses.create({ model: "pt-err401", input: "hi" }).catch((e) => e);
      assert.ok(o instanceof OpenAI.InternalServerError && o.status === 502, String(o));
      assert.match(o.message, /provider `oai` rejected the gateway's credential/);
    });
    await t.step(
      "a pool whose every key is refused: each named in the log, never shown",
      async () => {
        const before = h.upstream.requests.length;
        const res = await post(
          h.url + "/v1/messages",
          anthropicHeaders(),
          bodies.messages("cred-pool"),
        );
        await refused(res, "pool", 401);
        const sent = h.upstream.requests.slice(before).map((r) => r.headers["x-api-key"]);
        assert.deepEqual(sent.toSorted(), REVOKED, "both pool keys were tried");
        const named = h.logs.filter((l) =>
          l.msg === "provider_key_refused" && l.provider === "pool"
        )
          .map((l) => l.provider_key);
        assert.deepEqual(named.toSorted(), ["pool#0", "pool#1"]);
        const logs = JSON.stringify(h.logs);
        for (const key of REVOKED) assert.ok(!logs.includes(key), "no key value in the log");
      },
    );
  } finally {
    await h.close();
  }
});
