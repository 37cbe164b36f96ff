/**
 * Bedrock Runtime as the client's API (plugins/bedrock/, plugins/converse/), over HTTP against
 * the mocks (bedrock_client_harness.ts): who may call (the gateway key as a Bearer, or an AWS
 * Signature V4 made with it — checked, and every refusal in Bedrock's shape without an upstream
 * call), InvokeModel and Converse on routes of each family, JSON and event streams read by an
 * independent frame decoder, relayed to Bedrock as Bedrock sent it, CountTokens, errors and
 * in-stream exceptions, model ids raw or encoded, the target named in the metrics, the identity's
 * limits (a refusal is Bedrock's ThrottlingException) and usage.
 */
import assert from "node:assert/strict";
// A SigV4 signer other than the gateway's (@smithy/signature-v4): the requests it signs are
// checked by the gateway's. Test-only, so not in the import map.
// deno-lint-ignore no-import-prefix
import { AwsV4Signer } from "npm:aws4fetch@1.0.20";
import { bedrockHeaders, bedrockModelPath, bodies, LOOP_TOOL } from "./requests.ts";
import { BEDROCK_TEST_CREDENTIALS } from "./mock/bedrock.ts";
import { side as converseSide } from "./formats/converse.ts";
import {
  type BedrockClientHarness,
  clientFrames,
  HASHED_KEY,
  KEY,
  startBedrockClientHarness,
} from "./bedrock_client_harness.ts";

const invokePath = (model: string, stream = false) =>
  bedrockModelPath(model, stream ? "invoke-with-response-stream" : "invoke");
const conversePath = (model: string, stream = false) =>
  bedrockModelPath(model, stream ? "converse-stream" : "converse");

const call = (
  h: BedrockClientHarness,
  path: string,
  body: unknown,
  headers: Record<string, string> = bedrockHeaders(),
) => fetch(h.url + path, { method: "POST", headers, body: JSON.stringify(body) });

/** A request signed by aws4fetch as an AWS SDK would sign it. */
async function signed(
  h: BedrockClientHarness,
  path: string,
  body: string,
  opts: {
    keyId?: string;
    secret?: string;
    service?: string;
    region?: string;
    datetime?: string;
  } = {},
): Promise<Request> {
  const signer = new AwsV4Signer({
    url: h.url + path,
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    accessKeyId: opts.keyId ?? "team-a",
    secretAccessKey: opts.secret ?? KEY,
    service: opts.service ?? "bedrock",
    region: opts.region ?? "eu-west-3",
    datetime: opts.datetime,
  });
  const { url, headers } = await signer.sign();
  return new Request(url, { method: "POST", headers, body });
}

/** A Bedrock error: its status, `x-amzn-errortype` name and `{"message"}`. */
async function bedrockError(res: Response) {
  const type = res.headers.get("x-amzn-errortype") ?? "";
  const body = await res.json();
  assert.deepEqual(Object.keys(body), ["message"], JSON.stringify(body));
  return { status: res.status, type: type.replace(/:.*$/, ""), message: body.message as string };
}

const amzDate = (ms: number) => new Date(ms).toISOString().replace(/[:-]|\.\d{3}/g, "");

Deno.test("bedrock clients: who may call, and every refusal in Bedrock's shape before any upstream call", async (t) => {
  const h = await startBedrockClientHarness();
  const body = JSON.stringify(bodies.invoke());
  const path = invokePath("msg-text");
  try {
    await t.step("the gateway key as a Bearer (a Bedrock API key)", async () => {
      const res = await call(h, path, bodies.invoke());
      assert.equal(res.status, 200);
      assert.equal((await res.json()).type, "message");
    });

    await t.step("a SigV4 signature: the key's name as access key id, any region", async () => {
      const res = await fetch(await signed(h, path, body, { region: "ap-southeast-2" }));
      assert.equal(res.status, 200, await res.clone().text());
      await res.body?.cancel();
      const log = h.logs.at(-1)!;
      assert.equal(log.key, "team-a");
    });

    const refusals: [string, () => Promise<Response>, number, string, RegExp][] = [
      [
        "no credential",
        () => call(h, path, bodies.invoke(), { "content-type": "application/json" }),
        403,
        "UnrecognizedClientException",
        /missing API key: send Authorization: Bearer <key> or an AWS Signature V4/,
      ],
      [
        "a wrong Bearer",
        () => call(h, path, bodies.invoke(), bedrockHeaders("sk-wrong-key")),
        403,
        "UnrecognizedClientException",
        /invalid API key/,
      ],
      [
        "a signature made with another secret",
        async () => fetch(await signed(h, path, body, { secret: "sk-not-the-key" })),
        403,
        "InvalidSignatureException",
        /signature we calculated does not match/,
      ],
      [
        "a stale date (6 minutes)",
        async () =>
          fetch(await signed(h, path, body, { datetime: amzDate(Date.now() - 6 * 60_000) })),
        403,
        "InvalidSignatureException",
        /Signature expired/,
      ],
      [
        "a date ahead (6 minutes)",
        async () =>
          fetch(await signed(h, path, body, { datetime: amzDate(Date.now() + 6 * 60_000) })),
        403,
        "InvalidSignatureException",
        /Signature expired/,
      ],
      [
        "an unknown access key id",
        async () => fetch(await signed(h, path, body, { keyId: "nobody" })),
        403,
        "UnrecognizedClientException",
        /invalid API key/,
      ],
      [
        "a key configured as a digest (it cannot sign)",
        async () => fetch(await signed(h, path, body, { keyId: "team-b", secret: HASHED_KEY })),
        403,
        "UnrecognizedClientException",
        /invalid API key/,
      ],
      [
        "another service",
        async () => fetch(await signed(h, path, body, { service: "s3" })),
        403,
        "InvalidSignatureException",
        /service: 'bedrock'/,
      ],
      [
        "a body changed after signing",
        async () => {
          const req = await signed(h, path, body);
          return fetch(new Request(req, { body: body.replace("hi there", "hi THERE") }));
        },
        403,
        "InvalidSignatureException",
        /signature we calculated does not match/,
      ],
      [
        "a malformed SigV4 header",
        () =>
          call(h, path, bodies.invoke(), {
            "content-type": "application/json",
            authorization: "AWS4-HMAC-SHA256 Credential=x",
          }),
        400,
        "IncompleteSignatureException",
        /Credential/,
      ],
    ];
    for (const [what, send, status, type, message] of refusals) {
      await t.step(`${what}: ${status} ${type}`, async () => {
        const before = h.calls();
        const err = await bedrockError(await send());
        assert.deepEqual({ status: err.status, type: err.type }, { status, type }, err.message);
        assert.match(err.message, message);
        assert.equal(h.calls(), before, "no upstream call");
      });
    }

    await t.step("Converse and CountTokens take the same credentials", async () => {
      const res = await fetch(
        await signed(h, conversePath("msg-text"), JSON.stringify(bodies.converse())),
      );
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const refused = await call(h, conversePath("msg-text"), bodies.converse(), {
        "content-type": "application/json",
      });
      assert.equal((await bedrockError(refused)).status, 403);
    });
  } finally {
    await h.close();
  }
});

Deno.test("bedrock clients: InvokeModel on routes of each family, JSON and event stream", async (t) => {
  const h = await startBedrockClientHarness();
  try {
    for (
      const [model, vendor] of [
        ["msg-text", "messages"],
        ["chat-text", "chat"],
        ["gem-text", "generate-content"],
        ["bi-text", "messages"],
      ]
    ) {
      await t.step(`${model}: JSON, Anthropic's message`, async () => {
        const res = await call(h, invokePath(model), bodies.invoke());
        assert.equal(res.status, 200);
        const json = await res.json();
        assert.equal(json.type, "message");
        assert.equal(json.content[0].text, `Hello from ${vendor} mock: hi there`);
      });

      await t.step(
        `${model}: stream, chunk frames ending with the invocation's metrics`,
        async () => {
          const res = await call(h, invokePath(model, true), bodies.invoke());
          assert.equal(res.status, 200);
          assert.equal(res.headers.get("content-type"), "application/vnd.amazon.eventstream");
          const frames = clientFrames(new Uint8Array(await res.arrayBuffer()));
          assert.ok(frames.every((f) => f.type === "chunk" && !f.exception));
          const events = frames.map((f) => f.data);
          assert.equal(events[0].type, "message_start");
          const text = events.flatMap((e) =>
            e.type === "content_block_delta" ? [(e.delta as { text: string }).text] : []
          ).join("");
          assert.equal(text, `Hello from ${vendor} mock: hi there`);
          const stop = events.at(-1)!;
          assert.equal(stop.type, "message_stop");
          const metrics = stop["amazon-bedrock-invocationMetrics"] as Record<string, number>;
          assert.ok(metrics.inputTokenCount > 0 && metrics.outputTokenCount > 0);
          // The Bedrock mock's own metrics came through untouched: its frames were relayed.
          if (model.startsWith("bi-")) assert.equal(metrics.invocationLatency, 42);
          else assert.ok(metrics.invocationLatency >= metrics.firstByteLatency);
        },
      );
    }

    await t.step("relayed to Bedrock: the body as InvokeModel takes it, re-signed", async () => {
      const res = await call(h, invokePath("bi-text"), {
        ...bodies.invoke(),
        anthropic_beta: ["context-1m-2025-08-07"],
      }, { ...bedrockHeaders(), "anthropic-beta": "interleaved-thinking-2025-05-14" });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const sent = h.bedrock.requests.at(-1)!;
      assert.equal(sent.path, "/model/bi-text/invoke");
      assert.match(sent.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIAMOCKBEDROCK/);
      assert.equal(sent.json?.anthropic_version, "bedrock-2023-05-31");
      assert.deepEqual(sent.json?.anthropic_beta, [
        "interleaved-thinking-2025-05-14",
        "context-1m-2025-08-07",
      ]);
      assert.ok(!JSON.stringify(sent.headers).includes(KEY), "the client key never goes up");
    });

    await t.step("relayed to Anthropic: version and betas as its headers", async () => {
      const res = await call(h, invokePath("msg-text"), {
        ...bodies.invoke(),
        anthropic_version: "2026-10-21",
        anthropic_beta: ["context-1m-2025-08-07"],
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const sent = h.vendors.requests.at(-1)!;
      assert.equal(sent.path, "/v1/messages");
      assert.equal(sent.headers["anthropic-version"], "2026-10-21");
      assert.equal(sent.headers["anthropic-beta"], "context-1m-2025-08-07");
      assert.equal(sent.json?.model, "msg-text");
      assert.equal(sent.json?.anthropic_version, undefined);
    });

    await t.step("a tool call converted from Gemini, in a stream", async () => {
      const res = await call(h, invokePath("gem-tool", true), {
        ...bodies.invoke(),
        tools: [{ name: LOOP_TOOL.name, input_schema: LOOP_TOOL.parameters }],
      });
      const events = clientFrames(new Uint8Array(await res.arrayBuffer())).map((f) => f.data);
      const start = events.find((e) =>
        e.type === "content_block_start" &&
        (e.content_block as { type: string }).type === "tool_use"
      )!;
      assert.equal((start.content_block as { name: string }).name, LOOP_TOOL.name);
      const delta = events.find((e) => e.type === "message_delta")!;
      assert.equal((delta.delta as { stop_reason: string }).stop_reason, "tool_use");
    });

    await t.step("the body is checked as Bedrock checks it", async () => {
      const { anthropic_version: _, ...unversioned } = bodies.invoke();
      for (
        const [body, field] of [
          [unversioned, /^anthropic_version: required/],
          [{ ...bodies.invoke(), model: "another" }, /^model: "another" differs/],
          [{ ...bodies.invoke(), max_tokens: "many" }, /^max_tokens: /],
        ] as const
      ) {
        const err = await bedrockError(await call(h, invokePath("msg-text"), body));
        assert.equal(err.status, 400);
        assert.equal(err.type, "ValidationException");
        assert.match(err.message, field);
      }
    });
  } finally {
    await h.close();
  }
});

Deno.test("bedrock clients: Converse on routes of each family, JSON and event stream", async (t) => {
  const h = await startBedrockClientHarness();
  // Converse's tool loop as its test side asks it (LOOP_TOOL declared).
  const converse = converseSide.loop!.ask("", false, "hi there");
  try {
    for (
      const [prefix, vendor] of [
        ["msg", "messages"],
        ["chat", "chat"],
        ["gem", "generate-content"],
        ["bc", "converse"],
      ]
    ) {
      await t.step(`${prefix}: JSON text and a tool call`, async () => {
        const res = await call(h, conversePath(`${prefix}-text`), converse);
        assert.equal(res.status, 200);
        const json = await res.json();
        assert.deepEqual(json.output.message.content, [{
          text: `Hello from ${vendor} mock: hi there`,
        }]);
        assert.equal(json.stopReason, "end_turn");
        assert.ok(json.usage.inputTokens > 0 && json.usage.totalTokens > json.usage.outputTokens);
        const tool = await (await call(h, conversePath(`${prefix}-tool`), converse)).json();
        const use = tool.output.message.content.find((b: { toolUse?: unknown }) => b.toolUse);
        assert.equal(use.toolUse.name, LOOP_TOOL.name);
        assert.deepEqual(use.toolUse.input, { city: "Paris" });
        assert.equal(tool.stopReason, "tool_use");
      });

      await t.step(`${prefix}: stream, Converse's events in frames`, async () => {
        const res = await call(h, conversePath(`${prefix}-tool`, true), converse);
        assert.equal(res.status, 200);
        assert.match(
          res.headers.get("content-type") ?? "",
          /^application\/vnd\.amazon\.eventstream/,
        );
        const frames = clientFrames(new Uint8Array(await res.arrayBuffer()));
        const types = frames.map((f) => f.type);
        assert.equal(types[0], "messageStart");
        assert.deepEqual(types.slice(-2), ["messageStop", "metadata"]);
        const start = frames.find((f) => f.type === "contentBlockStart")!;
        assert.equal(
          (start.data.start as { toolUse: { name: string } }).toolUse.name,
          LOOP_TOOL.name,
        );
        const input = frames.flatMap((f) =>
          f.type === "contentBlockDelta"
            ? [(f.data.delta as { toolUse?: { input: string } }).toolUse?.input ?? ""]
            : []
        ).join("");
        assert.deepEqual(JSON.parse(input), { city: "Paris" });
        assert.equal(frames.at(-2)!.data.stopReason, "tool_use");
        assert.ok((frames.at(-1)!.data.usage as { outputTokens: number }).outputTokens > 0);
      });
    }

    await t.step("relayed to Bedrock's Converse as sent, the model in the path", async () => {
      const body = {
        ...converse,
        guardrailConfig: { guardrailIdentifier: "g", guardrailVersion: "1" },
      };
      const res = await call(h, conversePath("bc-text"), body);
      assert.equal(res.status, 200);
      await res.body?.cancel();
      const sent = h.bedrock.requests.at(-1)!;
      assert.equal(sent.path, "/model/bc-text/converse");
      assert.deepEqual(sent.json, body, "relayed as the client wrote it");
    });

    await t.step("what only Bedrock applies is refused on a converted route", async () => {
      const body = {
        ...converse,
        guardrailConfig: { guardrailIdentifier: "g", guardrailVersion: "1" },
      };
      const err = await bedrockError(await call(h, conversePath("chat-text"), body));
      assert.equal(err.status, 400);
      assert.equal(err.type, "ValidationException");
      assert.match(err.message, /^guardrailConfig: /);
    });
  } finally {
    await h.close();
  }
});

Deno.test("bedrock clients: CountTokens, either input, by a Messages provider", async (t) => {
  const h = await startBedrockClientHarness();
  const countPath = (model: string) => bedrockModelPath(model, "count-tokens");
  const invokeInput = {
    input: {
      invokeModel: { body: new TextEncoder().encode(JSON.stringify(bodies.invoke())).toBase64() },
    },
  };
  try {
    await t.step("invokeModel input, counted by Anthropic", async () => {
      const res = await call(h, countPath("msg-text"), invokeInput);
      assert.equal(res.status, 200);
      const json = await res.json();
      assert.deepEqual(Object.keys(json), ["inputTokens"]);
      assert.ok(json.inputTokens > 0);
      const sent = h.vendors.requests.at(-1)!;
      assert.equal(sent.path, "/v1/messages/count_tokens");
      assert.equal(sent.json?.max_tokens, undefined);
      assert.equal(sent.json?.model, "msg-text");
    });

    await t.step("converse input, converted to Anthropic's body", async () => {
      const res = await call(h, countPath("msg-text"), { input: { converse: bodies.converse() } });
      assert.equal(res.status, 200);
      assert.ok((await res.json()).inputTokens > 0);
      assert.deepEqual(h.vendors.requests.at(-1)!.json?.messages, [
        { role: "user", content: [{ type: "text", text: "hi there" }] },
      ]);
    });

    await t.step("counted by Bedrock's own CountTokens", async () => {
      const res = await call(h, countPath("bi-text"), invokeInput);
      assert.equal(res.status, 200);
      assert.ok((await res.json()).inputTokens > 0);
      assert.equal(h.bedrock.requests.at(-1)!.path, "/model/bi-text/count-tokens");
    });

    await t.step("a route without a Messages provider: Bedrock's 400", async () => {
      const err = await bedrockError(await call(h, countPath("chat-text"), invokeInput));
      assert.equal(err.status, 400);
      assert.equal(err.type, "ValidationException");
    });

    await t.step("an input that is neither", async () => {
      const err = await bedrockError(await call(h, countPath("msg-text"), { input: {} }));
      assert.equal(err.status, 400);
      assert.match(err.message, /^input: expected invokeModel or converse/);
    });
  } finally {
    await h.close();
  }
});

Deno.test("bedrock clients: errors as Bedrock's, in-stream exceptions, model ids raw or encoded", async (t) => {
  const h = await startBedrockClientHarness();
  try {
    await t.step("a provider's 429: ThrottlingException", async () => {
      for (const path of [invokePath("chat-err429"), conversePath("chat-err429")]) {
        const body = path.endsWith("invoke") ? bodies.invoke() : bodies.converse();
        const err = await bedrockError(await call(h, path, body));
        assert.deepEqual([err.status, err.type], [429, "ThrottlingException"]);
      }
    });

    await t.step("Anthropic's own JSON error is said in Bedrock's shape", async () => {
      const err = await bedrockError(await call(h, invokePath("msg-err400"), bodies.invoke()));
      assert.deepEqual([err.status, err.type], [400, "ValidationException"]);
    });

    await t.step("an error after content: an exception frame", async () => {
      for (
        const [path, body] of [
          [invokePath("chat-errevent", true), bodies.invoke()],
          [conversePath("chat-errevent", true), bodies.converse()],
        ] as const
      ) {
        const res = await call(h, path, body);
        assert.equal(res.status, 200);
        const frames = clientFrames(new Uint8Array(await res.arrayBuffer()));
        const last = frames.at(-1)!;
        assert.ok(last.exception, JSON.stringify(last));
        assert.match(last.type, /^[a-z]\w*Exception$/);
        assert.ok(frames.length > 2, "content came first");
      }
    });

    await t.step("a stream cut short: modelStreamErrorException", async () => {
      const res = await call(h, invokePath("chat-cut", true), bodies.invoke());
      const last = clientFrames(new Uint8Array(await res.arrayBuffer())).at(-1)!;
      assert.deepEqual([last.type, last.exception], ["modelStreamErrorException", true]);
    });

    await t.step(
      "GET /inference-profiles, which Claude Code asks first: Bedrock's 404",
      async () => {
        const res = await fetch(`${h.url}/inference-profiles?type=SYSTEM_DEFINED`, {
          headers: bedrockHeaders(),
        });
        const err = await bedrockError(res);
        assert.deepEqual([err.status, err.type], [404, "ResourceNotFoundException"]);
      },
    );

    const raw = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
    const arn =
      "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-x-v1:0";
    for (
      const [what, path] of [
        ["a model id with `:` raw (Claude Code)", `/model/${raw}/invoke`],
        ["the same id percent-encoded (the AWS SDKs)", invokePath(raw)],
        ["an ARN percent-encoded", invokePath(arn)],
        ["an ARN raw, `/` and all", `/model/${arn}/invoke`],
      ]
    ) {
      await t.step(`${what}: routed by the decoded id`, async () => {
        const res = await call(h, path, bodies.invoke());
        assert.equal(res.status, 200, await res.clone().text());
        await res.body?.cancel();
        assert.equal(h.bedrock.requests.at(-1)!.path, "/model/bi-text/invoke");
        assert.equal(h.logs.at(-1)!.model, path.includes("arn") ? arn : raw);
      });
    }

    await t.step("metrics name the target's provider system", () => {
      const metrics = h.gw.metrics.expose();
      assert.match(
        metrics,
        /gen_ai_provider_name="aws\.bedrock",gen_ai_request_model="us\.anthropic\.claude-sonnet/,
      );
      assert.match(metrics, /gen_ai_provider_name="openai",gen_ai_request_model="chat-errevent"/);
    });
  } finally {
    await h.close();
  }
});

Deno.test("bedrock clients: a provider's secret echoed into a relayed event stream is scrubbed", async (t) => {
  const h = await startBedrockClientHarness();
  const { sessionToken, secretAccessKey } = BEDROCK_TEST_CREDENTIALS;
  try {
    for (
      const [what, path, body] of [
        [
          "InvokeModel's chunk frames (base64 inside)",
          invokePath("bi-echo", true),
          bodies.invoke(),
        ],
        ["ConverseStream's frames", conversePath("bc-echo", true), bodies.converse()],
      ] as const
    ) {
      await t.step(what, async () => {
        const res = await call(h, path, body);
        assert.equal(res.status, 200);
        const frames = clientFrames(new Uint8Array(await res.arrayBuffer()));
        const text = JSON.stringify(frames);
        assert.match(text, /AWS4-HMAC-SHA256/, "the mock quoted the request's credentials");
        assert.ok(!text.includes(sessionToken), "the session token is scrubbed");
        assert.ok(!text.includes(secretAccessKey));
        assert.ok(frames.length > 2 && !frames.some((f) => f.exception), "still a stream");
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("bedrock clients: a throttling Bedrock fails over to Anthropic, before content, JSON and stream", async (t) => {
  const h = await startBedrockClientHarness();
  try {
    for (const [model, stream] of [["fo-err429", false], ["fo-earlyerr", true]] as const) {
      await t.step(`${model}${stream ? ", streamed" : ""}`, async () => {
        const res = await call(h, invokePath(model, stream), bodies.invoke());
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("x-gateway-provider"), "anthropic");
        assert.equal(res.headers.get("x-gateway-attempts"), "2");
        const text = stream
          ? clientFrames(new Uint8Array(await res.arrayBuffer())).flatMap((f) =>
            f.data.type === "content_block_delta" ? [(f.data.delta as { text: string }).text] : []
          ).join("")
          : (await res.json()).content[0].text;
        assert.equal(text, "Hello from messages mock: hi there");
        assert.ok(h.bedrock.requests.at(-1)!.path.startsWith(`/model/bi-`));
      });
    }
  } finally {
    await h.close();
  }
});

Deno.test("bedrock clients: the identity's limits and usage count Bedrock calls; a refusal is Bedrock's 429", async () => {
  const h = await startBedrockClientHarness({ requests_per_minute: 2 });
  try {
    const invoke = await call(h, invokePath("msg-text"), bodies.invoke());
    assert.equal(invoke.status, 200);
    await invoke.body?.cancel();
    const converse = await call(h, conversePath("chat-text", true), bodies.converse());
    assert.equal(converse.status, 200);
    await converse.arrayBuffer();
    const calls = h.calls();
    for (const path of [invokePath("msg-text", true), conversePath("gem-text")]) {
      const refused = await call(
        h,
        path,
        path.includes("invoke") ? bodies.invoke() : bodies.converse(),
      );
      const { status, type, message } = await bedrockError(refused);
      assert.deepEqual([status, type], [429, "ThrottlingException"], path);
      assert.match(
        message,
        /^team-a has reached its limit requests_per_minute \(2 requests per minute\)/,
      );
      assert.ok(Number(refused.headers.get("retry-after")) >= 1, path);
    }
    assert.equal(h.calls(), calls, "no upstream call for a refusal");
    // Usage as the provider reported it, relayed (Anthropic's JSON) and converted (chat's stream).
    const lines = h.logs.filter((l) => l.status === 200 && String(l.path).startsWith("/model/"));
    assert.deepEqual(lines.map((l) => [l.provider, l.passthrough]), [
      ["anthropic", true],
      ["openai", false],
    ]);
    for (const l of lines) {
      assert.ok(Number(l.input_tokens) > 0 && Number(l.output_tokens) > 0, JSON.stringify(l));
    }
  } finally {
    await h.close();
  }
});
