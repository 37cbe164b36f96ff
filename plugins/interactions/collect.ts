/**
 * A streamed answer gathered into the IR response it adds up to, so a kept stream is stored as
 * the same `Interaction` resource a JSON answer would have been.
 */
import type * as ir from "../../src/contract/ir.ts";

export class AnswerCollector {
  private head?: Extract<ir.StreamEvent, { type: "start" }>;
  private readonly parts: ir.Part[] = [];
  private usage?: ir.Usage;

  /** Takes one event; on `finish`, returns the whole response. */
  see(e: ir.StreamEvent): ir.Response | undefined {
    const part = "index" in e ? this.parts[e.index] : undefined;
    switch (e.type) {
      case "start":
        this.head = e;
        this.usage = e.usage;
        break;
      case "part_start":
        this.parts[e.index] = e.part.type === "text" || e.part.type === "thinking"
          ? { ...e.part, text: "" }
          : e.part.type === "tool_call"
          ? { ...e.part, arguments: "" }
          : e.part;
        break;
      case "text_delta":
      case "thinking_delta":
        if (part?.type === "text" || part?.type === "thinking") part.text += e.text;
        break;
      case "arguments_delta":
        if (part?.type === "tool_call") part.arguments += e.json;
        break;
      case "citation":
        if (part?.type === "text") (part.citations ??= []).push(e.citation);
        break;
      case "signature":
        if (part?.type === "text" || part?.type === "thinking" || part?.type === "tool_call") {
          part.signature = e.signature;
        }
        break;
      case "usage":
        this.usage = e.usage;
        break;
      case "finish":
        return {
          id: this.head?.id ?? "",
          model: this.head?.model ?? "",
          created: this.head?.created ?? 0,
          parts: this.parts.filter(Boolean),
          finish: e.reason,
          usage: e.usage ?? this.usage,
        };
    }
    return undefined;
  }
}
