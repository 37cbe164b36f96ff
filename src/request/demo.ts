/**
 * The built-in `demo` provider: answers locally and deterministically, with no network, so a
 * bare `deno task dev` plus one curl shows a working gateway. It is also the zero-upstream
 * target for benchmarks. It never stands in for a real upstream in translation tests.
 */
import type * as ir from "../kit/ir.ts";

/** What the demo provider lists as its models (it answers any name its route sends). */
export const DEMO_MODELS: readonly string[] = ["demo-1"];

function lastUserText(req: ir.Request): string {
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i];
    if (m.role !== "user") continue;
    const text = m.parts.flatMap((p) => p.type === "text" ? [p.text] : []).join(" ");
    if (text) return text;
  }
  return "";
}

function reply(req: ir.Request): { text: string; usage: ir.Usage } {
  const said = lastUserText(req);
  const text = said
    ? `Hello from the demo provider. You said: ${said}`
    : "Hello from the demo provider.";
  const promptChars = JSON.stringify(req.messages).length + JSON.stringify(req.system).length;
  return {
    text,
    usage: {
      inputTokens: Math.ceil(promptChars / 4),
      outputTokens: text.split(" ").length,
    },
  };
}

export function demoResponse(req: ir.Request, id: string, now: number): ir.Response {
  const { text, usage } = reply(req);
  return {
    id,
    model: req.model,
    created: now,
    parts: [{ type: "text", text }],
    finish: "stop",
    usage,
  };
}

/** The same answer as stream events, one word per delta. */
export function demoStream(
  req: ir.Request,
  id: string,
  now: number,
): ir.StreamEvent[] {
  const { text, usage } = reply(req);
  const words = text.split(/(?<= )/);
  return [
    { type: "start", id, model: req.model, created: now },
    { type: "part_start", index: 0, part: { type: "text" } },
    ...words.map((w): ir.StreamEvent => ({ type: "text_delta", index: 0, text: w })),
    { type: "part_stop", index: 0 },
    { type: "finish", reason: "stop", usage },
  ];
}
