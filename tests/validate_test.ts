/** `sparseObject`: optional fields checked only when present, with zod's paths and kinds. */
import assert from "node:assert/strict";
import { z } from "zod";
import { parseBody, sparseObject } from "../src/kit/validate.ts";
import { rejects } from "./codec_helpers.ts";

const schema = sparseObject({ model: z.string() }, {
  stream: z.boolean().optional(),
  temperature: z.number().nullish(),
  tools: z.array(z.looseObject({ name: z.string() })).optional(),
  level: z.preprocess((v) => (typeof v === "string" ? v.toUpperCase() : v), z.enum(["LOW"])),
});
const parse = (body: unknown) => parseBody(schema, body);

Deno.test("sparseObject: present optional fields are checked, named by their path", () => {
  rejects(() => parse({ temperature: 1 }), "model: required", "model");
  rejects(() => parse({ model: "m", stream: "yes" }), /^stream: expected boolean/, "stream");
  rejects(() => parse({ model: "m", stream: null }), /^stream: expected boolean/, "stream");
  rejects(() => parse({ model: "m", tools: [{ name: 1 }] }), /^tools\[0\]\.name: expected string/);
  rejects(() => parse({ model: "m", tools: [{}] }), "tools[0].name: required", "tools[0].name");
  // Two bad optional fields: the first in the body's order.
  rejects(() => parse({ model: "m", tools: 1, stream: 1 }), /^tools: /, "tools");
  rejects(() => parse({ model: "m", stream: 1, tools: 1 }), /^stream: /, "stream");
  // A bad required field comes first, wherever it stands.
  rejects(() => parse({ stream: 1, model: 2 }), /^model: /, "model");
});

Deno.test("sparseObject: unknown fields pass, parsed values replace raw ones", () => {
  const body = { model: "m", temperature: null, extra: { kept: true }, level: "low" };
  assert.deepEqual(parse(body), {
    model: "m",
    temperature: null,
    extra: { kept: true },
    level: "LOW",
  });
  // The client's own object is not rewritten (a relayed body is sent as its raw text anyway).
  assert.equal(body.level, "low");
});

Deno.test("parseBody: a body is parsed once per schema; copies and its JSON carry no mark", () => {
  const body = { model: "m", level: "low", extra: 1 };
  const first = parse(body);
  // The decoder of a converted request parses the body the endpoint already parsed.
  assert.equal(parse(body), first, "the endpoint's result, not a second zod pass");
  // A copy that changes a field (the Responses socket's next turn) is parsed on its own.
  rejects(() => parse({ ...body, level: "bad" }), /^level: /, "level");
  assert.notEqual(parse({ ...body }), first);
  assert.deepEqual(Object.keys(body), ["model", "level", "extra"]);
  assert.equal(JSON.stringify(body), '{"model":"m","level":"low","extra":1}');
  // Another schema does not take the first one's result.
  const other = sparseObject({ model: z.string() }, { extra: z.number() });
  assert.deepEqual(parseBody(other, body), { model: "m", level: "low", extra: 1 });
});
