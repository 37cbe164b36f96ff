/**
 * The "real CLI" proof: unmodified, published coding CLIs (Claude Code, Gemini CLI, Codex CLI,
 * pinned in tests/clients/package.json) run as subprocesses against an in-process gateway in
 * front of the mock upstream, fully offline. Each run must exit 0, print the mock provider's
 * reply, and its request must have reached the mock provider in that provider's own format.
 *
 * Install the CLIs first: `bash .ci/install-clients.sh` (or `npm ci --prefix tests/clients`).
 * Run: `deno test --allow-all --sanitize-ops --sanitize-resources tests/clients/`.
 * How each CLI is aimed at the gateway: tests/clients/README.md.
 */
import assert from "node:assert/strict";
import type { RouteConfig } from "../../src/config/config.ts";
import { type Harness, KEY, startHarness } from "../helpers.ts";
import { claude, codex, gemini, installed, PROMPT, RUN_TIMEOUT_MS, type RunResult } from "./cli.ts";
import { SEARCH_CITED, SEARCH_RESULTS } from "../mock/scenario.ts";
import type { RecordedRequest } from "../mock/upstream.ts";
import { modelCalls, startVertexGateway } from "../vertex_harness.ts";

// ---------------------------------------------------------------------------------------------
// Gateway + mock upstream (as tests/helpers.ts startHarness, plus routes for Gemini defaults)
// ---------------------------------------------------------------------------------------------

/** Gemini CLI's model names when run without `-m` (0.61.0). */
const GEMINI_ROUTER_MODEL = "gemini-3.5-flash-lite";
const GEMINI_DEFAULT_MODEL = "gemini-3.1-pro-preview";

/**
 * Beside the harness's routes (pt-*, resp-*, chat-*, msg-*, gem-* …), two for the Gemini CLI's
 * own model names: its JSON "router" model goes to the mock's `err400` scenario (the mock's text
 * reply is not the JSON the router asks for, on which the CLI retries for ~90 s before falling
 * back; a 400 makes it fall back at once), and `gemini-*` goes to the Gemini provider as is.
 */
const GEMINI_CLI_ROUTES = [
  {
    models: [GEMINI_ROUTER_MODEL],
    provider: "gemini",
    model: "gem-err400-router",
    passthrough: false,
  },
  { models: ["gemini-*"], provider: "gemini", passthrough: false },
];

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

const tail = (text: string, n = 1500) => text.length > n ? "…" + text.slice(-n) : text;

/** What a failed assertion shows: the CLI's output, the gateway's log, the upstream calls. */
function report(
  r: RunResult,
  h: Pick<Harness, "logs">,
  logsFrom: number,
  reqs: RecordedRequest[],
): string {
  const logs = h.logs.slice(logsFrom).map((l) => JSON.stringify(l)).join("\n");
  const upstream = reqs.map((q) => `${q.method} ${q.path}${q.search}`).join(
    "\n",
  );
  return [
    `exit ${r.code}${r.timedOut ? ` (killed after ${RUN_TIMEOUT_MS} ms)` : ""}, ${r.ms} ms`,
    `--- stdout\n${tail(r.stdout)}`,
    `--- stderr\n${tail(r.stderr)}`,
    `--- gateway access log\n${tail(logs, 3000)}`,
    `--- reached the mock upstream\n${upstream || "(nothing)"}`,
  ].join("\n");
}

/** The mock's vendor name for the provider a model prefix routes to. */
function vendorOf(model: string): string {
  const vendors: Record<string, string> = {
    msg: "messages",
    chat: "chat",
    resp: "responses",
    pt: "responses",
    gem: "generate-content",
    gemini: "generate-content",
  };
  return vendors[model.split("-")[0]];
}

/** The provider path a model's generation request must arrive at on the mock. */
function providerPath(model: string): RegExp {
  switch (vendorOf(model)) {
    case "messages":
      return /^\/v1\/messages$/;
    case "chat":
      return /^\/v1\/chat\/completions$/;
    case "responses":
      return /^\/v1\/responses$/;
    default:
      return new RegExp(`^/v1beta/models/${model}:streamGenerateContent$`);
  }
}

/**
 * What a run must show. `text`: stdout has the mock's "Hello from <vendor> mock: …say hi".
 * `tool`: the mock first calls the client's first tool with arguments that tool rejects; the
 * client sends the error back as a tool result in the provider's format, and the mock answers
 * "Tool said: …" only if it recognises that result, so stdout proves the whole round trip.
 */
type Expect = "text" | "tool" | "none";

interface Case {
  name: string;
  run: (url: string) => Promise<RunResult>;
  /** Model whose provider must have answered (decides reply text and provider path). */
  model: string;
  expect: Expect;
  /** Where the provider must have been called (default: the model's generation endpoint). */
  path?: RegExp;
  /** Extra checks on this run's upstream requests and output (`logsFrom`: its first log line). */
  check?: (
    reqs: RecordedRequest[],
    r: RunResult,
    h: Harness,
    logsFrom: number,
  ) => void;
  /** The gateway must refuse this run with a 400 whose message matches (nothing goes up). */
  rejected?: RegExp;
  /** Routes this run needs (tried first); the run gets a harness of its own. */
  routes?: RouteConfig[];
}

async function runCase(c: Case, h: Harness): Promise<void> {
  const reqsFrom = h.upstream.requests.length;
  const logsFrom = h.logs.length;
  const r = await c.run(h.url);
  const reqs = h.upstream.requests.slice(reqsFrom);
  const why = () => report(r, h, logsFrom, reqs);
  console.log(
    `  ${c.name}: exit ${r.code}, ${r.ms} ms, ${reqs.length} upstream request(s)`,
  );
  assert.equal(r.timedOut, false, `${c.name}: timed out\n${why()}`);
  if (c.rejected) {
    assert.notEqual(r.code, 0, `${c.name}: expected the CLI to fail\n${why()}`);
    assert.match(
      r.stdout + r.stderr,
      c.rejected,
      `${c.name}: the error is not shown\n${why()}`,
    );
    assert.equal(
      reqs.length,
      0,
      `${c.name}: a rejected request reached the provider`,
    );
    return;
  }
  assert.equal(r.code, 0, `${c.name}: non-zero exit\n${why()}`);
  if (c.expect === "text") {
    const reply = `Hello from ${vendorOf(c.model)} mock:`;
    assert.ok(
      r.stdout.includes(reply),
      `${c.name}: stdout lacks "${reply}"\n${why()}`,
    );
    assert.ok(
      r.stdout.includes(PROMPT),
      `${c.name}: the reply does not echo "${PROMPT}" (the mock echoes the last user text ` +
        `the provider saw)\n${why()}`,
    );
  } else if (c.expect === "tool") {
    assert.ok(
      r.stdout.includes("Tool said:"),
      `${c.name}: stdout lacks the mock's "Tool said:" (the tool result did not come back to ` +
        `the provider in its format)\n${why()}`,
    );
  }
  const path = c.path ?? providerPath(c.model);
  const hits = reqs.filter((q) => path.test(q.path));
  assert.ok(
    hits.length > 0,
    `${c.name}: nothing reached the mock at ${path}\n${why()}`,
  );
  const models = hits.map((q) => q.json?.model).filter((m) => m !== undefined && m !== c.model);
  assert.deepEqual(models, [], `${c.name}: upstream model differs\n${why()}`);
  c.check?.(reqs, r, h, logsFrom);
}

const ROUTES = ["msg", "chat", "resp", "gem"];

function claudeCases(): Case[] {
  const cases: Case[] = [];
  for (const expect of ["text", "tool"] as const) {
    for (const route of ROUTES) {
      const model = `${route}-${expect}-cli`;
      cases.push({
        name: `claude -p "${PROMPT}" --model ${model}`,
        model,
        expect,
        run: (url) => claude(url, ["--model", model, PROMPT]),
      });
    }
  }
  cases.push(...claudeWebSearchCases());
  for (const primary of ["msg-err529-cli", "msg-earlyerr-cli"]) {
    cases.push({
      name: `claude -p --model fo-claude-cli (primary ${primary} down → chat deployment)`,
      model: "chat-text-cli",
      expect: "text",
      routes: [{
        models: ["fo-claude-cli"],
        passthrough: false,
        targets: [
          { provider: "anthropic", model: primary, weight: 1 },
          { provider: "oai-chat", model: "chat-text-cli", weight: 1 },
        ],
      }],
      run: (url) => claude(url, ["--model", "fo-claude-cli", PROMPT]),
      check(reqs, _r, h, logsFrom) {
        assert.ok(
          reqs.some((q) => q.path === "/v1/messages" && q.json?.model === primary),
          "the Anthropic primary was tried first",
        );
        const answered = h.logs.slice(logsFrom)
          .filter((l) => l.model === "fo-claude-cli" && l.status === 200);
        assert.ok(answered.length > 0, "answers logged");
        for (const l of answered) {
          assert.equal(l.provider, "oai-chat", JSON.stringify(l));
        }
      },
    });
  }
  cases.push({
    name: 'claude -p "/context" --model msg-text-context (count_tokens)',
    model: "msg-text-context",
    expect: "none",
    path: /^\/v1\/messages\/count_tokens$/,
    run: (url) => claude(url, ["--model", "msg-text-context", "/context"]),
    check(reqs, r) {
      // Claude Code falls back to a local estimate when count_tokens fails: only the
      // provider's own record proves the gateway served them.
      const counts = reqs.filter((q) => q.path === "/v1/messages/count_tokens");
      assert.ok(
        counts.length >= 5,
        `/context: ${counts.length} count_tokens request(s) reached the provider (Claude Code ` +
          `2.1.197 sends ~14)\n${reqs.map((q) => q.path).join("\n")}\n${tail(r.stdout)}`,
      );
      assert.ok(
        r.stdout.includes("Context Usage"),
        `/context: no usage table\n${tail(r.stdout)}`,
      );
    },
  });
  return cases;
}

/** A prompt that makes Claude Code / Gemini CLI search (the mock's `websearch` calls it). */
const SEARCH_PROMPT = "Search the web: when was Deno 3 released?";

/**
 * Claude Code's WebSearch (default settings): the mock's main model calls the WebSearch tool;
 * Claude Code then sends a sub-request whose only tool is Anthropic's web_search_20250305,
 * forced. On a Responses or Gemini provider the gateway maps it to that provider's own search,
 * whose results come back as server_tool_use + web_search_tool_result; Claude Code hands them
 * to the main model as the tool's result, which the mock echoes ("Tool said: …"). On a chat
 * provider the sub-request gets the 400 naming the tool and the route.
 */
function claudeWebSearchCases(): Case[] {
  // `-p` cannot ask for permission: the run grants the tool (its search settings stay default).
  const ALLOW_SEARCH = ["--allowedTools", "WebSearch"];
  const target: Record<string, { path: RegExp; tool: string; source: string }> = {
    resp: {
      path: /^\/v1\/responses$/,
      tool: '[{"type":"web_search"}]',
      source: SEARCH_RESULTS[0].url,
    },
    gem: {
      path: /:streamGenerateContent$/,
      tool: '[{"googleSearch":{}}]',
      source: new URL(SEARCH_RESULTS[0].url).hostname,
    },
  };
  const cases: Case[] = Object.entries(target).map(([route, t]) => {
    const model = `${route}-websearch-cli`;
    return {
      name: `claude -p --model ${model} (WebSearch → ${route} hosted search)`,
      model,
      expect: "tool",
      run: (url) => claude(url, [...ALLOW_SEARCH, "--model", model, SEARCH_PROMPT]),
      check(reqs, r) {
        const searches = reqs.filter((q) =>
          t.path.test(q.path) && JSON.stringify(q.json?.tools) === t.tool
        );
        assert.ok(
          searches.length > 0,
          `no ${t.tool} search reached the provider`,
        );
        for (const want of [SEARCH_CITED, t.source]) {
          assert.ok(
            r.stdout.includes(want),
            `stdout lacks "${want}"\n${tail(r.stdout)}`,
          );
        }
      },
    };
  });
  cases.push({
    name: "claude -p --model chat-websearch-cli (WebSearch on a chat provider: 400)",
    model: "chat-websearch-cli",
    expect: "tool",
    run: (url) =>
      claude(url, [
        ...ALLOW_SEARCH,
        "--model",
        "chat-websearch-cli",
        SEARCH_PROMPT,
      ]),
    check(_reqs, r, h) {
      const refused = h.logs.filter((l) => l.model === "chat-websearch-cli" && l.status === 400);
      assert.ok(refused.length > 0, "the search sub-request was not refused");
      const message =
        /400 tools\[0\]: hosted tool "web_search" \(hosted web search\) cannot be used on route "chat-\*"/;
      assert.match(`400 ${refused[0].error}`, message);
      // Claude Code hands the API error to the model as the tool's result; the mock echoes it.
      assert.match(
        r.stdout,
        message,
        `the 400 did not reach Claude Code\n${tail(r.stdout)}`,
      );
    },
  });
  return cases;
}

/** Gemini CLI's google_web_search runs on this fixed model (0.61.0, modelConfig "web-search"). */
const GEMINI_SEARCH_MODEL = "gemini-3-flash-preview";

/**
 * Gemini CLI's google_web_search (default settings): the main model calls it; the CLI sends a
 * generateContent on GEMINI_SEARCH_MODEL whose only tool is googleSearch, routed here to an
 * Anthropic or Responses provider; the CLI reads groundingMetadata (sources, and `[n]` markers
 * at the supports' UTF-8 byte offsets) into the tool's result, which the mock echoes.
 */
function geminiWebSearchCases(): Case[] {
  const target: Record<
    string,
    { provider: string; path: RegExp; tool: string }
  > = {
    msg: {
      provider: "anthropic",
      path: /^\/v1\/messages$/,
      tool: "web_search_20250305",
    },
    resp: { provider: "oai", path: /^\/v1\/responses$/, tool: "web_search" },
  };
  return Object.entries(target).map(([route, t]) => {
    const model = `${route}-websearch-cli`;
    return {
      name: `gemini -m ${model} -p (google_web_search → ${route} hosted search)`,
      model,
      expect: "tool",
      routes: [{
        models: [GEMINI_SEARCH_MODEL],
        provider: t.provider,
        model,
        passthrough: false,
      }],
      run: (url) => gemini(url, ["-m", model, "-p", SEARCH_PROMPT]),
      check(reqs, r) {
        const searches = reqs.filter((q) =>
          t.path.test(q.path) &&
          JSON.stringify(
              q.json?.tools?.map((x: { type: string }) => x.type),
            ) === `["${t.tool}"]`
        );
        assert.ok(
          searches.length > 0,
          `no ${t.tool} search reached the provider`,
        );
        for (
          const want of [
            `${SEARCH_CITED}[1]`,
            "Sources:",
            SEARCH_RESULTS[0].url,
          ]
        ) {
          assert.ok(
            r.stdout.includes(want),
            `stdout lacks "${want}"\n${tail(r.stdout)}`,
          );
        }
      },
    };
  });
}

function geminiCases(): Case[] {
  const cases: Case[] = [];
  for (const expect of ["text", "tool"] as const) {
    for (const route of ["gem", "msg", "chat", "resp"]) {
      const model = `${route}-${expect}-cli`;
      cases.push({
        name: `gemini -m ${model} -p "${PROMPT}"`,
        model,
        expect,
        run: (url) => gemini(url, ["-m", model, "-p", PROMPT]),
      });
    }
  }
  cases.push({
    name: `gemini -p "${PROMPT}" (no -m: router ${GEMINI_ROUTER_MODEL}, then default model)`,
    model: GEMINI_DEFAULT_MODEL,
    expect: "text",
    run: (url) => gemini(url, ["-p", PROMPT]),
    check(reqs) {
      // The JSON router call went through the gateway (renamed to the err400 scenario) as a
      // non-streaming generateContent; the CLI then fell back to its default model.
      const router = reqs.filter((q) => q.path.endsWith(":generateContent"));
      assert.ok(
        router.some((q) => q.path === "/v1beta/models/gem-err400-router:generateContent"),
        `router call did not reach the provider: ${reqs.map((q) => q.path).join(", ")}`,
      );
      const config = router[0]?.json?.generationConfig ?? {};
      assert.equal(
        config.responseMimeType,
        "application/json",
        "router call lost its JSON mode",
      );
    },
  });
  cases.push(...geminiWebSearchCases());
  return cases;
}

/** Frames of the provider-side sockets for one model. */
const framesFor = (h: Harness, model: string) =>
  h.upstream.wsFrames.map((f) => JSON.parse(f)).filter((f) => f.model === model);

function codexCases(): Case[] {
  // Codex 0.169.0 declares the hosted tool {"type":"web_search"} on every turn (default
  // settings, as here): Anthropic gets its own web_search server tool, chat and Gemini (whose
  // built-in tools do not mix with functions) get it dropped and reported.
  const cases: Case[] = [
    {
      name: `codex exec -m pt-text-cli "${PROMPT}" (WebSocket passthrough)`,
      model: "pt-text-cli",
      expect: "text",
      run: (url) => codex(url, ["-m", "pt-text-cli", PROMPT]),
      check(reqs, _r, h) {
        const upgrades = reqs.filter((q) => q.method === "GET" && q.path === "/v1/responses");
        assert.equal(
          upgrades.length,
          1,
          "expected one provider WebSocket per client socket",
        );
        const frames = framesFor(h, "pt-text-cli");
        assert.ok(
          frames.some((f) => f.generate === false),
          "the prewarm frame did not arrive",
        );
        assert.ok(
          frames.some((f) => typeof f.previous_response_id === "string"),
          "the turn chained by previous_response_id did not reach the provider",
        );
      },
    },
    {
      name: `codex exec -m pt-tool-cli "${PROMPT}" (WebSocket passthrough, tool round trip)`,
      model: "pt-tool-cli",
      expect: "tool",
      run: (url) => codex(url, ["-m", "pt-tool-cli", PROMPT]),
    },
  ];
  for (const route of ["msg", "chat", "gem"]) {
    const model = `${route}-text-cli`;
    cases.push({
      name: `codex exec -m ${model} "${PROMPT}" (WebSocket converted, default web_search)`,
      model,
      expect: "text",
      run: (url) => codex(url, ["-m", model, PROMPT]),
      check(reqs) {
        const sent = reqs.filter((q) => providerPath(model).test(q.path)).at(-1)?.json ?? {};
        const hosted = JSON.stringify(sent.tools ?? []).match(
          /web_search_\d+|googleSearch/g,
        );
        assert.deepEqual(
          hosted,
          route === "msg" ? ["web_search_20250305"] : null,
          `${model}: hosted search sent upstream as ${hosted}`,
        );
      },
    });
  }
  cases.push({
    name: `codex exec -m msg-search-cli "${PROMPT}" (Anthropic runs its web search)`,
    model: "msg-search-cli",
    expect: "none",
    run: (url) => codex(url, ["-m", "msg-search-cli", PROMPT]),
    check(_reqs, r) {
      assert.ok(
        r.stdout.includes(SEARCH_CITED),
        `the answer after Anthropic's search did not reach Codex\n${tail(r.stdout)}`,
      );
    },
  });
  for (const model of ["msg-tool-cli", "chat-tool-cli", "gem-tool-cli"]) {
    cases.push({
      name: `codex exec -m ${model} "${PROMPT}" (WebSocket converted, tool round trip)`,
      model,
      expect: "tool",
      run: (url) => codex(url, ["-m", model, PROMPT]),
    });
  }
  // Issue 15: Codex (0.169.0) with an API-key provider (`openai_base_url`) never asks the
  // gateway for model metadata (no GET /v1/models) and prints its fallback warning; the window
  // goes in its config instead (docs/responses.md, `main.ts --codex-config`).
  cases.push({
    name: `codex exec -m msg-text-cli "${PROMPT}" (model metadata: not fetched, fallback warning)`,
    model: "msg-text-cli",
    expect: "text",
    run: (url) =>
      codex(url, [
        "-c",
        "model_context_window=200000",
        "-c",
        "model_auto_compact_token_limit=180000",
        "-m",
        "msg-text-cli",
        PROMPT,
      ]),
    check(_reqs, r, h, logsFrom) {
      const listed = h.logs.slice(logsFrom).filter((l) => String(l.endpoint).includes("model"));
      assert.deepEqual(
        listed,
        [],
        "Codex asked the gateway for models: serve its catalog shape",
      );
      assert.match(r.stderr, /Model metadata for `msg-text-cli` not found/);
      console.log(
        "    codex printed: " +
          r.stderr.match(/warning: Model metadata[^\n]*/)?.[0],
      );
    },
  });
  return cases;
}

Deno.test({
  name: "real CLIs through the gateway (claude, gemini, codex)",
  ignore: !installed(),
  async fn(t) {
    const h = await startHarness({ extraRoutes: GEMINI_CLI_ROUTES });
    try {
      const cases = [...claudeCases(), ...geminiCases(), ...codexCases()];
      // CLI_TESTS=a,b runs only the runs whose name contains one of the words (e.g. gemini).
      const only = Deno.env.get("CLI_TESTS")?.split(",").filter(Boolean) ?? [];
      for (
        const c of cases.filter((c) => !only.length || only.some((w) => c.name.includes(w)))
      ) {
        if (!c.routes) {
          await t.step(c.name, () => runCase(c, h));
          continue;
        }
        const own = await startHarness({
          extraRoutes: [...c.routes, ...GEMINI_CLI_ROUTES],
        });
        try {
          await t.step(c.name, () => runCase(c, own));
        } finally {
          await own.close();
        }
      }
    } finally {
      // CLI_TESTS_DUMP=file.json saves what reached the provider and the access log, for study.
      const dump = Deno.env.get("CLI_TESTS_DUMP");
      if (dump) {
        const { requests, wsFrames } = h.upstream;
        await Deno.writeTextFile(
          dump,
          JSON.stringify({ requests, wsFrames, logs: h.logs }),
        );
      }
      await h.close();
    }
  },
});

Deno.test({
  name: "claude -p on an exhausted token budget prints the gateway's refusal",
  ignore: !installed(),
  async fn() {
    const h = await startHarness({
      tweak: (c) => void (c.keys[0] = { ...c.keys[0], limits: { tokens_per_day: 10 } }),
    });
    try {
      // One answer (18 tokens) spends the day's 10.
      const spent = await fetch(`${h.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01" },
        body: JSON.stringify({
          model: "msg-text",
          max_tokens: 50,
          messages: [{ role: "user", content: "hi" }],
        }),
      });
      assert.equal(spent.status, 200);
      await spent.body?.cancel();
      const posts = () => h.upstream.requests.filter((q) => q.method === "POST");
      const calls = posts().length;
      const r = await claude(h.url, ["--model", "msg-text-cli", PROMPT]);
      const why = () => report(r, h, 0, posts().slice(calls));
      assert.equal(r.timedOut, false, why());
      assert.notEqual(r.code, 0, why());
      assert.match(
        r.stdout + r.stderr,
        /team-a has reached its limit tokens_per_day \(10 tokens per day \(UTC\)\)/,
        why(),
      );
      // POSTs only: the gateway reads model lists (GETs) in the background.
      assert.equal(
        posts().length,
        calls,
        "a refused request reached the provider",
      );
    } finally {
      await h.close();
    }
  },
});

Deno.test({
  name: "claude -p: a long answer the Gemini route decodes in three hops arrives whole",
  ignore: !installed(),
  async fn() {
    const h = await startHarness();
    try {
      // A model whose per-request cap is 40,000 tokens (tests/mock/long_decode.ts), so three
      // hops fit the budget Claude Code may ask for (it caps max_tokens at 128,000).
      const model = "gem-long3-hopcap40000-cli";
      const r = await claude(h.url, ["--model", model, PROMPT], {
        CLAUDE_CODE_MAX_OUTPUT_TOKENS: "100000",
      });
      const calls = h.upstream.requests.filter((q) => q.path.includes(model));
      const why = () => report(r, h, 0, calls);
      assert.equal(r.timedOut, false, why());
      assert.equal(r.code, 0, why());
      // Every hop's text, in order, once: the reply (the last user turn: Claude Code's context
      // and the prompt), then each hop's range.
      assert.ok(r.stdout.includes("Hello from generate-content mock:"), why());
      assert.ok(r.stdout.includes(PROMPT), why());
      assert.ok(
        r.stdout.trimEnd().endsWith(" (0-40000)(40000-80000)(80000-81000)"),
        why(),
      );
      for (const range of ["(0-40000)", "(40000-80000)", "(80000-81000)"]) {
        assert.equal(
          r.stdout.split(range).length,
          2,
          `${range} once\n${why()}`,
        );
      }
      // One Messages request, three hops upstream: the same body, then the same with a token.
      assert.equal(calls.length, 3, why());
      assert.ok(
        calls.every((q) => q.path.endsWith(":streamGenerateContent")),
        why(),
      );
      assert.equal(
        calls[0].json!.generationConfig.maxOutputTokens,
        100_000,
        why(),
      );
      for (const hop of calls.slice(1)) {
        const { continuationToken, ...rest } = hop.json!;
        assert.match(continuationToken, /^ct_/, why());
        assert.deepEqual(rest, calls[0].json, why());
      }
      const line = h.logs.find((l) => l.model === model)!;
      assert.equal(line.hops, 2, why());
      assert.equal(
        (line.usage as { outputTokens: number }).outputTokens,
        81_000,
        why(),
      );
    } finally {
      await h.close();
    }
  },
});

Deno.test({
  name: "claude -p on a Vertex Claude route, gemini -p on a Vertex Gemini route (relayed)",
  ignore: !installed(),
  async fn(t) {
    // Gemini CLI's router model as on the vendor harness, on Vertex; the runs' models by prefix.
    const h = await startVertexGateway({
      routes: [{
        models: [GEMINI_ROUTER_MODEL],
        provider: "vertex-gemini",
        model: "vg-err400-router",
        passthrough: false,
      }],
    });
    const runs = [
      {
        name: `claude -p "${PROMPT}" --model vc-text-cli`,
        run: () => claude(h.url, ["--model", "vc-text-cli", PROMPT]),
        provider: "vertex-claude",
        reply: "Hello from messages mock:",
        path: /\/publishers\/anthropic\/models\/vc-text-cli:streamRawPredict$/,
      },
      {
        name: `gemini -m vg-text-cli -p "${PROMPT}"`,
        run: () => gemini(h.url, ["-m", "vg-text-cli", "-p", PROMPT]),
        provider: "vertex-gemini",
        reply: "Hello from generate-content mock:",
        path: /\/publishers\/google\/models\/vg-text-cli:streamGenerateContent$/,
      },
    ];
    try {
      for (const c of runs) {
        await t.step(c.name, async () => {
          const reqsFrom = modelCalls(h.vertex).length;
          const logsFrom = h.logs.length;
          const r = await c.run();
          const reqs = modelCalls(h.vertex).slice(reqsFrom);
          const why = () => report(r, h, logsFrom, reqs);
          assert.equal(r.timedOut, false, why());
          assert.equal(r.code, 0, why());
          assert.ok(
            r.stdout.includes(c.reply) && r.stdout.includes(PROMPT),
            why(),
          );
          assert.ok(reqs.some((q) => c.path.test(q.path)), why());
          const lines = h.logs.slice(logsFrom).filter((l) => l.provider === c.provider);
          assert.ok(
            lines.some((l) => l.passthrough === true && l.status === 200),
            why(),
          );
        });
      }
    } finally {
      await h.close();
    }
  },
});
