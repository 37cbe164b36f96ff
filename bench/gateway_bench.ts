/**
 * `deno task bench`: what the gateway costs, as ratios against calling the mock provider
 * directly in the same run (Deno prints "N x slower than <baseline>"). The demo provider is
 * the zero-upstream case: pure gateway overhead.
 */
import { anthropicHeaders, bodies, openaiHeaders, post, startHarness } from "../tests/helpers.ts";

const h = await startHarness();

async function call(url: string, headers: Record<string, string>, body: unknown) {
  const res = await post(url, headers, body);
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

const chat = (model: string, stream: boolean) => ({
  ...bodies.chat(model, stream),
  ...(stream && { stream_options: { include_usage: true } }),
});

for (const stream of [false, true]) {
  const group = stream ? "stream" : "json";
  Deno.bench({
    name: `${group}: mock provider directly`,
    group,
    baseline: true,
    fn: () =>
      call(`${h.upstream.url}/v1/chat/completions`, openaiHeaders(), chat("chat-text", stream)),
  });
  Deno.bench({
    name: `${group}: gateway passthrough (chat → chat)`,
    group,
    fn: () => call(`${h.url}/v1/chat/completions`, openaiHeaders(), chat("chat-text", stream)),
  });
  Deno.bench({
    name: `${group}: gateway converted (chat → messages)`,
    group,
    fn: () => call(`${h.url}/v1/chat/completions`, openaiHeaders(), chat("msg-text", stream)),
  });
  Deno.bench({
    name: `${group}: gateway converted (messages → chat)`,
    group,
    fn: () =>
      call(`${h.url}/v1/messages`, anthropicHeaders(), bodies.messages("chat-text", stream)),
  });
  Deno.bench({
    name: `${group}: gateway demo provider (no upstream)`,
    group,
    fn: () => call(`${h.url}/v1/chat/completions`, openaiHeaders(), chat("demo-x", stream)),
  });
}
