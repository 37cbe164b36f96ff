/**
 * A handler hands the core back the route `ctx.route` gave it; the core takes it back as its own
 * `Resolved` through `resolvedOf`, checked, never by trusting the type.
 */
import assert from "node:assert/strict";
import { validateConfig } from "../src/config/config.ts";
import type { Route } from "../src/kit/route.ts";
import { resolvedOf, Router } from "../src/request/router.ts";

const config = validateConfig({
  listen: { hostname: "127.0.0.1", port: 0 },
  keys: [{ name: "k", key: "sk-test-key" }],
  providers: [
    { name: "a", api: "chat", base_url: "http://127.0.0.1:1", api_key: "x" },
    { name: "b", api: "messages", base_url: "http://127.0.0.1:2", api_key: "y" },
  ],
  routes: [{
    models: ["m-*"],
    targets: [{ provider: "a" }, { provider: "b", model: "renamed" }],
  }],
});

Deno.test("route: the core takes back its own route, and refuses one a plugin made up", () => {
  const resolved = new Router(config).resolve("m-1");
  const handedBack: Route = resolved;
  assert.equal(resolvedOf(handedBack), resolved);
  // The same fields, not made by the core: its targets lack what failover needs.
  const madeUp: Route = { ...resolved, targets: resolved.targets.map((t) => ({ ...t })) };
  assert.throws(() => resolvedOf(madeUp), {
    name: "TypeError",
    message: `a route the core did not resolve: ${resolved.label}`,
  });
});

Deno.test("route: another target of the route keeps the request and sends as that target", () => {
  const resolved = new Router(config).resolve("m-1");
  assert.equal(resolved.provider.name, "a");
  assert.equal(resolved.upstreamModel, "m-1");
  const second = resolved.to(resolved.targets[1]);
  assert.equal(second.provider.name, "b");
  assert.equal(second.upstreamModel, "renamed");
  assert.equal(second.requested, "m-1");
  assert.equal(second.targets, resolved.targets);
  assert.equal(second.label, resolved.targets[1].label);
  assert.equal(resolvedOf(second), second);
});
