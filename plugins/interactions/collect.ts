/**
 * A streamed answer gathered into the IR response it adds up to, so a kept stream is stored as
 * the same `Interaction` resource a JSON answer would have been.
 */
import type * as ir from "../../src/kit/ir.ts";
import { foldEvent } from "../../src/kit/ir.ts";

export class AnswerCollector {
  private readonly res: ir.Response = { id: "", model: "", created: 0, parts: [], finish: "stop" };

  /** Takes one event; on `finish`, returns the whole response. */
  see(e: ir.StreamEvent): ir.Response | undefined {
    foldEvent(this.res, e);
    if (e.type !== "finish") return undefined;
    return { ...this.res, parts: this.res.parts.filter(Boolean) };
  }
}
