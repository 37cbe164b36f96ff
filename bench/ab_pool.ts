/**
 * Pools the rounds of several `bench/ab.sh` runs (their outputs, saved to files): the median of
 * every round's B/A ratio, req/s and CPU per request, with a bootstrap 95% interval. On this VM a
 * single run's median moves by a few percent (single rounds by tens of percent), so a claim of
 * "within 3%" rests on many runs' rounds together:
 *
 *   for i in 1 2 3 4 5 6; do TOGETHER=1 ROUNDS=16 bash bench/ab.sh A B | tee -a ab.txt; done
 *   deno run --allow-read bench/ab_pool.ts ab.txt
 */
const RATIOS = /^(CPU per request )?B\/A per round: (.*); median/;

function median(values: number[]): number {
  const v = values.toSorted((a, b) => a - b);
  return (v[Math.floor((v.length - 1) / 2)] + v[Math.floor(v.length / 2)]) / 2;
}

/** The 2.5th and 97.5th percentiles of the medians of 2,000 resamples (fixed seed: repeatable). */
function interval(values: number[]): [number, number] {
  let seed = 1;
  const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const medians = Array.from(
    { length: 2000 },
    () => median(values.map(() => values[Math.floor(random() * values.length)])),
  ).sort((a, b) => a - b);
  return [medians[50], medians[1949]];
}

const rounds = { "req/s": [] as number[], "CPU per request": [] as number[] };
for (const file of Deno.args) {
  for (const line of (await Deno.readTextFile(file)).split("\n")) {
    const m = line.match(RATIOS);
    if (m) rounds[m[1] ? "CPU per request" : "req/s"].push(...m[2].split(" ").map(Number));
  }
}
for (const [what, values] of Object.entries(rounds)) {
  if (!values.length) continue;
  const [low, high] = interval(values).map((x) => x.toFixed(4));
  console.log(
    `${what} B/A: ${values.length} rounds, pooled median ${median(values).toFixed(4)} ` +
      `(95% bootstrap interval ${low}–${high})`,
  );
}
