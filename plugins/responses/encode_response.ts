/** IR response → the Responses `response` object a client receives (non-streaming). */
import type { ClientContext } from "../../src/kit/codec.ts";
import { GatewayError } from "../../src/kit/errors.ts";
import type * as ir from "../../src/kit/ir.ts";
import { attachedSignature, encryptedContentOf } from "./carrier.ts";
import {
  callPrefix,
  compactionItem,
  itemId,
  messageItem,
  metaOf,
  outputText,
  reasoningItem,
  responseObject,
  terminalOf,
  toolCallItem,
  toolNamespaces,
  urlCitation,
  webSearchCallItem,
} from "./output.ts";

export function encodeResponse(res: ir.Response, ctx: ClientContext): unknown {
  const meta = metaOf(ctx, res.id, res.created);
  const output = ctx.compaction
    ? [compactionItem(itemId("cmp", meta.id, 0), textOf(res.parts))]
    : outputItems(res.parts, meta.id, toolNamespaces(ctx));
  const response = responseObject(meta, output, terminalOf(res.finish), res.usage);
  ctx.onAnswer?.(response);
  return response;
}

/** The answer's text: a compaction turn's summary. */
const textOf = (parts: readonly ir.Part[]) =>
  parts.map((p) => (p.type === "text" ? p.text : "")).join("");

/** One output item per part, plus a reasoning item after each part with a foreign signature. */
function outputItems(parts: readonly ir.Part[], respId: string, namespaces: Map<string, string>) {
  const items: unknown[] = [];
  const id = (prefix: string) => itemId(prefix, respId, items.length);
  const carry = (sig: ir.Signature | undefined) => {
    const carrier = attachedSignature(sig);
    if (carrier) items.push(reasoningItem(id("rs"), "", carrier));
  };
  for (const part of parts) {
    switch (part.type) {
      case "text": {
        const notes = (part.citations ?? []).map((c) => urlCitation(c, part.text));
        items.push(messageItem(id("msg"), "completed", [outputText(part.text, notes)]));
        carry(part.signature);
        break;
      }
      case "hosted_call":
        items.push(webSearchCallItem(id("ws"), part, true));
        break;
      case "thinking":
        items.push(reasoningItem(id("rs"), part.text, encryptedContentOf(part)));
        break;
      case "redacted_thinking":
        items.push(reasoningItem(id("rs"), "", encryptedContentOf(part)));
        break;
      case "tool_call":
        items.push(
          toolCallItem(
            id(callPrefix(part)),
            part,
            part.arguments,
            "completed",
            namespaces.get(part.name),
          ),
        );
        carry(part.signature);
        break;
      default:
        throw new GatewayError(
          502,
          "upstream",
          `the upstream answered with ${part.type} output, which a Responses output cannot carry`,
        );
    }
  }
  return items;
}
