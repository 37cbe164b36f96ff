#!/usr/bin/env bash
# A/B of two checkouts of the gateway on JSON, relayed (chat → chat) or, with MODEL=msg-text-chunks22,
# converted (chat → messages), in one run on loopback:
# one mock (keeping no requests), both gateways side by side, wrk rounds of 3 s in turns (8 at
# c=32, 4 at c=1; which goes first swaps every round); prints every round and the medians. Changes
# of a few percent need this: single runs on a 2-core machine move by ±5%.
#
#   bash bench/ab.sh DIR_A DIR_B        (e.g. a `git worktree` of main, and this checkout)
#
# LIMITS_B='{"requests_per_minute":1000000000,"tokens_per_day":1000000000000}' gives B's key those
# limits (docs/limits.md; A's key has none), and LIMITS_REDIS_B=redis://… counts them in Redis:
#   LIMITS_B='…' bash bench/ab.sh . .   (the cost of limits on one checkout)
set -euo pipefail
a=$(realpath "$1") b=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$here/.."

deno eval --ext=ts "
  import { startMockUpstream } from './tests/mock/upstream.ts';
  const m = await startMockUpstream({ record: false });
  // Each checkout gets its own test config: an older one may not know newer fields.
  // Plain-http providers default to a fresh connection per call; production providers (https)
  // keep theirs, and so does bench/processes.ts: both sides keep them where the option exists.
  const configOf = async (dir: string) => {
    const config = await (await import('file://' + dir + '/tests/helpers.ts')).mockConfig(m.url);
    const knows = (await Deno.readTextFile(dir + '/src/config.ts')).includes('keep_alive');
    if (knows) for (const p of config.providers) p.keep_alive = true;
    return config;
  };
  await Deno.writeTextFile('$tmp/config.json', JSON.stringify(await configOf('$a')));
  const config = await configOf('$b');
  const limits = Deno.env.get('LIMITS_B');
  if (limits) config.keys[0] = { ...config.keys[0], limits: JSON.parse(limits) };
  const redis = Deno.env.get('LIMITS_REDIS_B');
  if (redis) config.limits_store = { ...config.limits_store, redis_url: redis };
  await Deno.writeTextFile('$tmp/config_b.json', JSON.stringify(config));
  console.log('mock on ' + m.url);" >"$tmp/mock.log" 2>&1 &
until grep -q 'mock on' "$tmp/mock.log"; do sleep 0.2; done

start() { # dir port config
  PORT=$2 GATEWAY_ACCESS_LOG=off METRICS_PORT=0 deno run --unstable-no-legacy-abort \
    --allow-net --allow-env --allow-read "$1/main.ts" --config "$tmp/$3" >"$tmp/$2.log" 2>&1 &
}
start "$a" 18181 config.json
start "$b" 18182 config_b.json
for _ in $(seq 150); do
  grep -q listening "$tmp/18181.log" && grep -q listening "$tmp/18182.log" && break
  sleep 0.2
done
grep -q listening "$tmp/18181.log" && grep -q listening "$tmp/18182.log" || {
  cat "$tmp/18181.log" "$tmp/18182.log" >&2
  exit 1
}

context=$(printf 'You are a careful coding assistant. %.0s' {1..30})
cat >"$tmp/json.lua" <<LUA
wrk.method = "POST"
wrk.body = [==[{"model":"${MODEL:-chat-text-chunks22}","stream":false,"messages":[{"role":"system","content":"$context"},{"role":"user","content":"Explain what this function does and suggest one improvement."}]}]==]
wrk.headers["authorization"] = "Bearer sk-test-key-team-a"
wrk.headers["content-type"] = "application/json"
LUA
load() { # port connections seconds
  wrk -t1 -c"$2" -d"$3"s --latency -s "$tmp/json.lua" "http://127.0.0.1:$1/v1/chat/completions"
}
rps() { load "$1" 32 3 | awk '/Requests\/sec/ {print int($2)}'; }
p50() { load "$1" 1 3 | awk '$1 == "50%" {print $2}'; }
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2}'; }

for port in 18181 18182; do load $port 32 3 >/dev/null; done # warm both
ra=() rb=() la=() lb=()
# Each round swaps which goes first: the second of a pair reads ~1% faster (A/A runs).
for i in 1 2 3 4 5 6 7 8; do
  if ((i % 2)); then ra+=("$(rps 18181)") rb+=("$(rps 18182)"); else rb+=("$(rps 18182)") ra+=("$(rps 18181)"); fi
done
for i in 1 2 3 4; do
  if ((i % 2)); then la+=("$(p50 18181)") lb+=("$(p50 18182)"); else lb+=("$(p50 18182)") la+=("$(p50 18181)"); fi
done
echo "A $a: c=32 ${ra[*]} req/s, median $(median "${ra[@]}"); c=1 p50 ${la[*]}"
echo "B $b: c=32 ${rb[*]} req/s, median $(median "${rb[@]}"); c=1 p50 ${lb[*]}"
