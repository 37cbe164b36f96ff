import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sha256 } from "../src/request/sha256.ts";

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

Deno.test("sha256 matches node:crypto across block boundaries and UTF-8", () => {
  // FIPS 180-2's first example, then lengths around the 55/56/64-byte padding edges.
  assert.equal(
    hex(sha256("abc")),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  const texts = ["", "sk-test-key-team-a", "é🙂".repeat(40), "k".repeat(1000)];
  for (let n = 50; n <= 130; n++) texts.push("x".repeat(n));
  // A longer text after a shorter one: scratch space is reused between calls.
  for (const text of [...texts, ...texts.toReversed()]) {
    assert.equal(hex(sha256(text)), createHash("sha256").update(text).digest("hex"), text);
  }
});
