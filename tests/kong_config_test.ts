/**
 * kong.yml agrees with the service: every public endpoint the format plugins and the core serve
 * (src/request/formats.ts) is routed by Kong,
 * no route leads to a path the service lacks, health endpoints stay private, and the routes and
 * service are set up for long unbuffered streams. Runs `deck validate` when decK is installed.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { Endpoint } from "../src/request/formats.ts";
import { FORMATS, mockConfig } from "./helpers.ts";
import { startGateway } from "./process.ts";

const KONG_YML = new URL("../kong.yml", import.meta.url);
/** The layer for `identities.kong_consumers: true`: kong.yml plus authentication. */
const CONSUMERS_YML = new URL("../kong.consumers.yml", import.meta.url);
const SEVENTY_MINUTES_MS = 70 * 60 * 1000; // 4,200,000

// deno-lint-ignore no-explicit-any
type Obj = Record<string, any>;

interface Route {
  name: string;
  methods: string[];
  paths: string[];
  protocols?: string[];
  [key: string]: unknown;
}

const config: Obj = parse(await Deno.readTextFile(KONG_YML));
const services: Obj[] = config.services ?? [];
const service = services.find((s) => s.name === "llm-gateway");
const routes: Route[] = [
  ...(service?.routes ?? []),
  ...(config.routes ?? []).filter((r: Obj) =>
    r.service === "llm-gateway" ||
    r.service?.name === "llm-gateway"
  ),
];
const plugins: Obj[] = [...(config.plugins ?? []), ...(service?.plugins ?? [])];
const publicEndpoints = FORMATS.endpoints.filter((e) => !e.internal);
const internalEndpoints = FORMATS.endpoints.filter((e) => e.internal);

/**
 * Kong's path matching: a plain path is a prefix match; a path starting with `~` is a regex,
 * anchored at the start of the path (Kong 3.x), matched against the path without query string.
 */
function kongPathMatches(routePath: string, path: string): boolean {
  if (routePath.startsWith("~")) return new RegExp(`^(?:${routePath.slice(1)})`).test(path);
  return path.startsWith(routePath);
}

function routesFor(method: string, path: string): Route[] {
  return routes.filter((r) =>
    (r.methods === undefined || r.methods.includes(method)) &&
    (r.paths ?? []).some((p) => kongPathMatches(p, path))
  );
}

function describe(e: Endpoint): string {
  return `${e.name} (${e.method} ${e.example})`;
}

Deno.test("kong.yml: format version, upstream with health checks", () => {
  assert.equal(config._format_version, "3.0");
  const upstream = (config.upstreams ?? []).find((u: Obj) => u.name === "llm-gateway");
  assert.ok(upstream, "upstream llm-gateway is declared");
  assert.equal(upstream.algorithm, "least-connections");
  const targets = upstream.targets ?? [];
  assert.ok(targets.length >= 2, "several gateway instances as targets");
  for (const t of targets) assert.match(t.target, /^[^:]+:\d+$/, "target is host:port");

  const active = upstream.healthchecks?.active;
  assert.ok(active, "active health checks");
  // /healthz (liveness) or /readyz (also 503 while draining): a private health endpoint.
  assert.ok(
    internalEndpoints.some((e) => e.method === "GET" && e.example === active.http_path),
    `active.http_path ${active.http_path} is one of the service's health endpoints`,
  );
  // Every interval and threshold defaults to 0, which means "off".
  for (
    const [where, value] of Object.entries({
      "healthy.interval": active.healthy?.interval,
      "healthy.successes": active.healthy?.successes,
      "unhealthy.interval": active.unhealthy?.interval,
      "unhealthy.http_failures": active.unhealthy?.http_failures,
      "unhealthy.tcp_failures": active.unhealthy?.tcp_failures,
      "unhealthy.timeouts": active.unhealthy?.timeouts,
    })
  ) {
    assert.ok(Number.isInteger(value) && value > 0, `active.${where} is a positive integer`);
  }
  const passive = upstream.healthchecks?.passive;
  assert.ok(passive, "passive health checks");
  assert.ok(
    passive.unhealthy?.tcp_failures > 0 || passive.unhealthy?.timeouts > 0,
    "passive checks eject targets that fail at the connection level",
  );
});

Deno.test("kong.yml: service points at the upstream with 70-minute timeouts (ms)", () => {
  assert.ok(service, "service llm-gateway is declared");
  assert.equal(service.host, "llm-gateway", "service host is the upstream name");
  assert.equal(service.protocol, "http");
  for (const key of ["connect_timeout", "read_timeout", "write_timeout"]) {
    assert.ok(Number.isInteger(service[key]), `${key} is an integer number of milliseconds`);
  }
  assert.ok(service.connect_timeout > 0 && service.connect_timeout <= 60_000);
  assert.ok(service.read_timeout >= SEVENTY_MINUTES_MS, "read_timeout allows 70-minute idle");
  assert.ok(service.write_timeout >= SEVENTY_MINUTES_MS, "write_timeout allows 70-minute idle");
});

Deno.test("kong.yml: every route streams unbuffered and keeps path and host", () => {
  assert.ok(routes.length > 0);
  const names = new Set<string>();
  for (const r of routes) {
    assert.ok(r.name, "route has a name");
    assert.ok(!names.has(r.name), `route name ${r.name} is unique`);
    names.add(r.name);
    assert.ok(Array.isArray(r.paths) && r.paths.length > 0, `${r.name}: paths`);
    assert.ok(Array.isArray(r.methods) && r.methods.length > 0, `${r.name}: methods`);
    assert.equal(r.strip_path, false, `${r.name}: strip_path`);
    assert.equal(r.preserve_host, true, `${r.name}: preserve_host`);
    assert.equal(r.request_buffering, false, `${r.name}: request_buffering`);
    assert.equal(r.response_buffering, false, `${r.name}: response_buffering`);
    assert.deepEqual([...(r.protocols ?? [])].sort(), ["http", "https"], `${r.name}: protocols`);
    for (const p of r.paths) {
      if (p.startsWith("~")) {
        assert.doesNotThrow(() => new RegExp(p.slice(1)), `${r.name}: regex ${p}`);
      } else {
        assert.ok(p.startsWith("/"), `${r.name}: path ${p} starts with /`);
      }
    }
  }
});

Deno.test("kong.yml: every public endpoint is routed", () => {
  for (const e of publicEndpoints) {
    assert.ok(routesFor(e.method, e.example).length > 0, `no route for ${describe(e)}`);
  }
  // Both Gemini actions, not only the example's.
  assert.ok(
    routesFor("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent").length > 0,
    "streamGenerateContent is routed",
  );
  // Bedrock's streaming operations, and model ids as Claude Code sends them (`:` and an ARN's
  // `/` raw).
  for (
    const path of [
      "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream",
      "/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.c/invoke",
      "/model/amazon.nova-pro-v1%3A0/converse-stream",
    ]
  ) assert.ok(routesFor("POST", path).length > 0, `${path} is routed`);
  // Vertex AI's paths as each client sends them: every action, v1 and v1beta1, express mode.
  const vertex = "/projects/p/locations/us-east5/publishers";
  for (
    const [path, route] of [
      [`/v1${vertex}/anthropic/models/claude-x@20250929:rawPredict`, "vertex_raw_predict"],
      [`/v1${vertex}/anthropic/models/claude-x@20250929:streamRawPredict`, "vertex_raw_predict"],
      [
        `/v1beta1${vertex}/google/models/gemini-2.5-pro:streamGenerateContent`,
        "vertex_generate_content",
      ],
      [
        "/v1beta1/publishers/google/models/gemini-2.5-pro:generateContent",
        "vertex_generate_content",
      ],
    ]
  ) {
    assert.ok(routesFor("POST", path).some((r) => r.name === route), `${path} → ${route}`);
  }
  assert.equal(
    routesFor("POST", `/v1${vertex}/anthropic/models/claude-x:countTokens`).length,
    0,
    "an action not served is not routed",
  );
});

Deno.test("kong.yml: every route leads to an endpoint the service has", () => {
  for (const r of routes) {
    for (const p of r.paths) {
      for (const m of r.methods) {
        // HEAD is served wherever GET is (src/server.ts).
        const served = publicEndpoints.filter((e) => e.method === (m === "HEAD" ? "GET" : m));
        assert.ok(
          served.some((e) => kongPathMatches(p, e.example)),
          `route ${r.name}: ${m} ${p} matches no public endpoint's example`,
        );
        // A plain path is a prefix (`/v1/messages` would also route `/v1/messages/batches`):
        // every path must be a regex anchored at the end.
        assert.match(p, /^~.*\$$/, `route ${r.name}: ${p} must be an anchored regex (~…$)`);
      }
    }
  }
});

Deno.test("kong.yml: health endpoints are not exposed", () => {
  // Whatever the method: Kong's health checks reach targets directly.
  for (const e of internalEndpoints) {
    const hit = routes.filter((r) => (r.paths ?? []).some((p) => kongPathMatches(p, e.example)));
    assert.deepEqual(hit.map((r) => r.name), [], `${e.example} must not be routed`);
  }
});

Deno.test("kong.yml: stacked plugins", () => {
  const byName = (name: string) => plugins.find((p) => p.name === name);

  const correlation = byName("correlation-id");
  assert.ok(correlation, "correlation-id plugin");
  assert.match(correlation.config?.header_name ?? "", /request-id/i);
  assert.equal(correlation.config?.echo_downstream, true);

  const size = byName("request-size-limiting");
  assert.ok(size, "request-size-limiting plugin");
  assert.ok(size.config?.allowed_payload_size > 0);

  assert.ok(byName("prometheus"), "prometheus plugin");

  const rate = byName("rate-limiting");
  assert.ok(rate, "rate-limiting plugin");
  assert.equal(rate.config?.policy, "redis");
  assert.ok(rate.config?.redis?.host, "rate-limiting redis.host");
  assert.ok(Number.isInteger(rate.config?.redis?.port), "rate-limiting redis.port");
  const limits = ["second", "minute", "hour", "day", "month", "year"]
    .map((k) => rate.config?.[k])
    .filter((v) => v !== undefined && v !== null);
  assert.ok(limits.length > 0 && limits.every((v) => Number.isInteger(v) && v > 0));
});

Deno.test("kong.yml: TLS certificate with SNIs", () => {
  const certs: Obj[] = config.certificates ?? [];
  assert.ok(certs.length > 0, "certificates section");
  for (const c of certs) {
    assert.ok(typeof c.cert === "string" && c.cert.length > 0, "cert");
    assert.ok(typeof c.key === "string" && c.key.length > 0, "key");
    assert.ok(Array.isArray(c.snis) && c.snis.length > 0, "snis");
  }
});

Deno.test("kong.consumers.yml: key-auth on the service every route belongs to, with no anonymous consumer", async () => {
  // kong.yml alone authenticates nobody: it is not the one to pair with kong_consumers.
  const auth = /auth|openid|jwt|ldap|mtls|acl/;
  assert.deepEqual(plugins.filter((p) => auth.test(p.name)).map((p) => p.name), []);
  // Every route is the service's, and none carries a plugin of its own that could override it.
  const all = [...(service?.routes ?? []), ...(config.routes ?? [])];
  assert.equal(routes.length, all.length, "every route belongs to llm-gateway");
  assert.deepEqual(all.filter((r) => r.plugins?.length).map((r) => r.name), []);
  const layer: Obj = parse(await Deno.readTextFile(CONSUMERS_YML));
  const keyAuth = (layer.plugins ?? []).filter((p: Obj) => p.name === "key-auth");
  assert.equal(keyAuth.length, 1);
  const [plugin] = keyAuth;
  assert.equal(plugin.service, "llm-gateway");
  assert.ok(!plugin.route && !plugin.consumer, "bound to the service alone");
  assert.equal(plugin.enabled ?? true, true);
  assert.equal(plugin.config?.anonymous ?? null, null, "no anonymous consumer");
  assert.equal(plugin.config?.hide_credentials, true);
  assert.deepEqual(plugin.tags, ["llm-gateway"]);
  // The setting's docs send the reader to it.
  const limits = await Deno.readTextFile(new URL("../docs/limits.md", import.meta.url));
  assert.match(limits, /kong\.consumers\.yml/);
});

async function hasDeck(): Promise<boolean> {
  try {
    const out = await new Deno.Command("deck", {
      args: ["version"],
      stdout: "null",
      stderr: "null",
    })
      .output();
    return out.success;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

const deckPresent = await hasDeck();

Deno.test({
  name: deckPresent
    ? "kong.yml: deck validate"
    : "kong.yml: deck validate (IGNORED: `deck` not installed; run .ci/install-proxy-tools.sh)",
  ignore: !deckPresent,
  async fn() {
    // decK 1.4 (Debian) validates offline; `-s/--state` names the file.
    const out = await new Deno.Command("deck", {
      args: ["validate", "--state", KONG_YML.pathname],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    assert.ok(
      out.success,
      `deck validate failed (${out.code}):\n${dec.decode(out.stdout)}${dec.decode(out.stderr)}`,
    );
  },
});

Deno.test({
  name: deckPresent
    ? "kong.consumers.yml: deck validate, with kong.yml"
    : "kong.consumers.yml: deck validate (IGNORED: `deck` not installed)",
  ignore: !deckPresent,
  async fn() {
    const validate = (...files: URL[]) =>
      new Deno.Command("deck", {
        args: ["validate", ...files.flatMap((f) => ["--state", f.pathname])],
        stdout: "piped",
        stderr: "piped",
      }).output();
    const out = await validate(KONG_YML, CONSUMERS_YML);
    const dec = new TextDecoder();
    assert.ok(out.success, `${dec.decode(out.stdout)}${dec.decode(out.stderr)}`);
    // It is a layer: its plugin names kong.yml's service, which it does not define.
    const alone = await validate(CONSUMERS_YML);
    assert.match(
      dec.decode(alone.stderr),
      /service llm-gateway for plugin key-auth: entity not found/,
    );
  },
});

Deno.test("kong_consumers: the gateway warns at start that Kong must authenticate every route", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gateway-kong-consumers-" });
  try {
    const config = {
      ...await mockConfig("http://127.0.0.1:9"),
      identities: { kong_consumers: true },
      trusted_proxies: ["127.0.0.1"],
    };
    const gateway = await startGateway(config, dir);
    try {
      await gateway.wait(
        /gateway: warning: identities\.kong_consumers is on: .* sync kong\.yml with kong\.consumers\.yml/,
        "the warning",
      );
    } finally {
      await gateway.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
