/**
 * Model lists that show what can be called: a pattern route lists the models its provider
 * reports on its own list endpoint (read page by page, in the background) that the route's
 * patterns match, plus the `catalog`; a route that renames the model lists only its catalog
 * entries; the demo provider lists its models; a provider whose list fails (or is too large)
 * keeps its last one; a reload during a read has the new config's providers read once it ends.
 */
import assert from "node:assert/strict";
import {
  type Harness,
  KEY,
  mockConfig,
  openaiHeaders,
  PROVIDER_KEY,
  startHarness,
} from "./helpers.ts";
import { Reloader } from "../src/reload.ts";
import { startMockUpstream } from "./mock/upstream.ts";
import { startGateway } from "./process.ts";
import { Anthropic } from "./sdk/deps.ts";

const ids = async (url: string, headers: Record<string, string>) => {
  const res = await fetch(url, { headers });
  assert.equal(res.status, 200);
  const body = await res.json();
  return (body.data as { id: string }[]).map((m) => m.id);
};

const failedReads = (h: Harness) => h.logs.filter((l) => l.msg === "provider_models_failed");

const withCatalog = () =>
  startHarness({
    tweak: (c) => {
      c.catalog = [
        { id: "msg-sonnet", display_name: "Sonnet (mock)", context_window: 200_000 },
        { id: "renamed-pro" },
      ];
    },
  });

Deno.test("model lists: pattern routes list their providers' models (paged), catalog, demo", async (t) => {
  const h = await withCatalog();
  const list = (headers = openaiHeaders()) => ids(`${h.url}/v1/models`, headers);
  try {
    await t.step("before any read: routes' own and catalog ids, at once", async () => {
      assert.deepEqual(await list(), ["demo-1", "msg-sonnet", "renamed-pro"]);
    });
    const before = h.upstream.requests.length;
    await h.gw.providerModels.refresh();
    // In config order: the mock config's routes follow the registry (chat before responses).
    const expected = [
      "chat-text",
      "chat-think",
      // renamed-* (model: chat-text-renamed): not "renamed-reported", which the provider
      // reports and the pattern matches; only its catalog entry below
      "pt-text",
      "resp-text",
      "msg-text",
      "msg-think",
      "msg-tool",
      "msg-sonnet",
      "gem-text",
      // Embedding models too (served at /v1/embeddings); not gem-imagen (it only predicts).
      "gem-embedding",
      "gem-flash",
      "demo-1",
      "renamed-pro",
    ];
    await t.step("each vendor's list endpoint, every page, with the provider key", () => {
      const reads = h.upstream.requests.slice(before).map((r) => `${r.path}${r.search}`).sort();
      assert.deepEqual(
        reads,
        [
          "/v1/models",
          "/v1/models",
          "/v1/models?limit=1000",
          "/v1/models?limit=1000&after_id=claude-unrouted",
          "/v1/models?limit=1000&after_id=msg-think",
          `/v1beta/models?pageSize=1000&pageToken=${encodeURIComponent(btoa("2"))}`,
          "/v1beta/models?pageSize=1000",
        ].sort(),
      );
      const keys = h.upstream.requests.slice(before).map((r) =>
        r.headers["x-api-key"] ?? r.headers["x-goog-api-key"] ?? r.headers.authorization
      );
      assert.ok(keys.every((k) => k === PROVIDER_KEY || k === `Bearer ${PROVIDER_KEY}`));
    });
    await t.step(
      "what routes match, in config order; unrouted and image-only left out",
      async () => {
        assert.ok(h.upstream.models.openai.includes("renamed-reported"));
        assert.deepEqual(await list(), expected);
      },
    );
    await t.step("Claude Code's read: ?limit=1000 with x-api-key, Anthropic's shape", async () => {
      const res = await fetch(`${h.url}/v1/models?limit=1000`, {
        headers: { "x-api-key": KEY },
      });
      const body = await res.json();
      assert.equal(body.has_more, false);
      assert.deepEqual(body.data.map((m: { id: string }) => m.id), expected);
      assert.equal(body.data[0].type, "model");
      const one = await fetch(`${h.url}/v1/models/gem-flash`, { headers: openaiHeaders() });
      assert.equal((await one.json()).owned_by, "gemini");
    });
    await t.step("the Anthropic SDK pages through them (5 a page, after_id)", async () => {
      const anthropic = new Anthropic({ baseURL: h.url, apiKey: KEY, maxRetries: 0 });
      const listed = [];
      for await (const m of anthropic.models.list({ limit: 5 })) listed.push(m.id);
      assert.deepEqual(listed, expected);
    });
    await t.step(
      "a provider whose list fails keeps its last list; the next good read updates it",
      async () => {
        h.upstream.models.anthropic.push("msg-new");
        h.upstream.failModelLists = true;
        await h.gw.providerModels.refresh();
        assert.deepEqual(await list(), expected);
        const failed = failedReads(h);
        assert.deepEqual(failed.map((l) => l.provider).sort(), [
          "anthropic",
          "gemini",
          "oai",
          "oai-chat",
        ]);
        assert.ok(failed.every((l) => String(l.error).includes("503")));
        h.upstream.failModelLists = false;
        await h.gw.providerModels.refresh();
        assert.ok((await list()).includes("msg-new"));
      },
    );
  } finally {
    await h.close();
  }
});

Deno.test("model lists: the gateway reads them at start-up (main.ts), without being asked", async () => {
  const upstream = await startMockUpstream();
  const dir = await Deno.makeTempDir({ prefix: "gateway-model-lists-" });
  try {
    const gateway = await startGateway(await mockConfig(upstream.url), dir);
    try {
      let listed: string[] = [];
      for (let i = 0; i < 100 && !listed.includes("msg-tool"); i++) {
        await new Promise((r) => setTimeout(r, 100));
        listed = await ids(`${gateway.url}/v1/models`, openaiHeaders());
      }
      assert.ok(listed.includes("msg-tool") && listed.includes("gem-flash"), String(listed));
    } finally {
      await gateway.stop();
    }
  } finally {
    await upstream.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("model lists: a reload during a read has its new providers read when that read ends", async () => {
  const h = await startHarness();
  try {
    // The first read starts here, with the providers in force; the reload comes while it runs.
    h.gw.providerModels.start();
    const config = h.gw.live.current.config;
    const chat = config.providers.find((p) => p.name === "oai-chat")!;
    const chatRoute = config.routes.find((r) => r.provider === "oai-chat")!;
    const next = {
      ...config,
      providers: [...config.providers, { ...chat, name: "oai-new" }],
      routes: [...config.routes, { ...chatRoute, models: ["gpt-*"], provider: "oai-new" }],
    };
    assert.equal(new Reloader(h.gw, () => next).reload("test").outcome, "applied");
    await h.gw.providerModels.refresh();
    assert.ok(
      (await ids(`${h.url}/v1/models`, openaiHeaders())).includes("gpt-unrouted"),
      "oai-new's list was not read after the reload",
    );
  } finally {
    await h.close();
  }
});

Deno.test("model lists: a list over 8 MiB is a failed read; the last good list stays", async (t) => {
  const h = await startHarness();
  const list = () => ids(`${h.url}/v1/models`, openaiHeaders());
  // Lengths first: a failing deepEqual of tens of thousands of ids takes minutes to diff.
  const assertKept = async (good: string[]) => {
    const now = await list();
    assert.equal(now.length, good.length, "the over-size list was taken");
    assert.deepEqual(now, good);
  };
  const long = (prefix: string, n: number, length: number) =>
    Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(length, "0")}`);
  try {
    await h.gw.providerModels.refresh();
    const good = await list();
    await t.step("one page: OpenAI's list of 80,000 models (about 12 MiB)", async () => {
      h.upstream.models.openai.push(...long("chat-", 80_000, 100));
      await h.gw.providerModels.refresh();
      await assertKept(good);
      const failed = failedReads(h);
      assert.deepEqual(failed.map((l) => l.provider).sort(), ["oai", "oai-chat"]);
      assert.ok(failed.every((l) => l.error === "a list over 8 MiB"), JSON.stringify(failed));
    });
    await t.step("all pages together: Gemini's 20 pages of 512 KiB", async () => {
      h.upstream.models.gemini.push(...long("gem-", 40, 256 * 1024));
      await h.gw.providerModels.refresh();
      await assertKept(good);
      const failed = failedReads(h).filter((l) => l.provider === "gemini");
      assert.deepEqual(failed.map((l) => l.error), ["a list over 8 MiB"]);
    });
    await t.step(
      "a page cursor of 300,000 characters is not followed, nor logged whole",
      async () => {
        const anthropic = () => ids(`${h.url}/v1/models`, { "x-api-key": KEY });
        const before = await anthropic();
        h.upstream.models.anthropic.splice(1, 0, `msg-${"x".repeat(300_000)}`);
        await h.gw.providerModels.refresh();
        assert.deepEqual(await anthropic(), before);
        const failed = failedReads(h).filter((l) => l.provider === "anthropic").at(-1)!;
        assert.equal(failed.error, "a page cursor over 1024 characters");
      },
    );
  } finally {
    await h.close();
  }
});
