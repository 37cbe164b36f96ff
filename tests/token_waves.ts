/**
 * A `tokens_per_minute` identity spent by waves of clients at once, checked as one gateway must
 * count it however many instances or threads the clients reach (tests/scale_proof_test.ts,
 * tests/workers_test.ts). An admitted request holds its reservation (its body / 4 and 4,096
 * output tokens: more than the small limits used here) until it is counted, and a window reached
 * with what is held refuses: a wave's clients run one at a time, so the waves spend the window
 * answer by answer and pass it by less than one answer — not by one answer per client.
 */
import assert from "node:assert/strict";

export interface TokenWaves {
  /** One client's request. */
  request(): Promise<{ status: number }>;
  /** Clients in a wave, sending at once. */
  clients: number;
  /** The identity's tokens_per_minute `used` (its usage endpoint). */
  used(): Promise<number>;
  limit: number;
  /** Tokens of one answer. */
  answer: number;
  /** What the gateways logged about their limits store, for a failed count's message. */
  storeErrors?: () => string;
}

/** Waves until the window is spent, each counted exactly and under limit + answer; then all 429. */
export async function spendByWaves(w: TokenWaves): Promise<void> {
  const wave = async () =>
    (await Promise.all(Array.from({ length: w.clients }, w.request))).map((r) => r.status);
  let admitted = 0;
  let counted = 0;
  while (counted < w.limit) {
    const statuses = await wave();
    const passed = statuses.filter((s) => s === 200).length;
    assert.ok(passed > 0, `nothing is held between waves: one at least runs (${statuses})`);
    assert.ok(statuses.every((s) => s === 200 || s === 429), String(statuses));
    admitted += passed;
    counted = await w.used();
    assert.equal(
      counted,
      w.answer * admitted,
      `every answer counted once${w.storeErrors?.() ?? ""}`,
    );
    assert.ok(counted < w.limit + w.answer, `${counted} tokens`);
  }
  const spent = await wave();
  assert.ok(spent.every((s) => s === 429), `spent everywhere: ${spent}`);
  assert.equal(await w.used(), counted);
}
