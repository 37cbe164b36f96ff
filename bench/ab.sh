#!/usr/bin/env bash
# A/B of two checkouts of the gateway on JSON, relayed (chat → chat) or, with MODEL=msg-text-chunks22,
# converted (chat → messages), in one run on loopback:
# one mock (keeping no requests), both gateways side by side, wrk rounds of 3 s in turns (8 at
# c=32, 4 at c=1; which goes first swaps every round); prints every round and the medians. Changes
# of a few percent need this: single runs on a 2-core machine move by ±5%. ROUNDS=16 for more.
#
#   bash bench/ab.sh DIR_A DIR_B        (e.g. a `git worktree` of main, and this checkout)
#
# LIMITS_B='{"requests_per_minute":1000000000,"tokens_per_day":1000000000000}' gives B's key those
# limits (docs/limits.md; A's key has none), and LIMITS_REDIS_B=redis://… counts them in Redis:
#   LIMITS_B='…' bash bench/ab.sh . .   (the cost of limits on one checkout)
# MODEL_B=… gives B's requests another model: MODEL_B=msg-text-chunks22 bash bench/ab.sh . .
# compares relayed and converted JSON on one checkout. GZIP_B=1 sends B's bodies gzip-compressed
# (the cost of decoding a request body): GZIP_B=1 bash bench/ab.sh . .; AZURE_B=1 sends B's
# through the azure-openai platform (its mock: the cost of a platform's addressing and headers).
# TOGETHER=1 loads both gateways at once each round (two wrk, c=32 each) instead of in turns: the
# VM's drift, which moves rounds taken seconds apart by ±30% some hours, then hits both sides of a
# round alike; read CPU per request (each gets about half the machine, so req/s halve).
# A claim of a few percent needs several runs: bench/ab_pool.ts pools their rounds (saved output).
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
    // The config module's place: src/config/ since the folders, src/ before them.
    const source = await Deno.readTextFile(dir + '/src/config/config.ts')
      .catch(() => Deno.readTextFile(dir + '/src/config.ts'));
    const knows = source.includes('keep_alive');
    if (knows) for (const p of config.providers) p.keep_alive = true;
    return config;
  };
  await Deno.writeTextFile('$tmp/config.json', JSON.stringify(await configOf('$a')));
  const config = await configOf('$b');
  const limits = Deno.env.get('LIMITS_B');
  if (limits) config.keys[0] = { ...config.keys[0], limits: JSON.parse(limits) };
  if (Deno.env.get('AZURE_B')) {
    // B's chat provider goes through the azure-openai platform (its own URL, api-key header).
    const { startMockAzure, AZURE_TEST_KEY } = await import('./tests/mock/azure.ts');
    const azure = await startMockAzure();
    const chat = config.providers.find((p: { api: string }) => p.api === 'chat');
    Object.assign(chat, {
      platform: 'azure-openai',
      base_url: azure.url + '/openai/v1',
      api_key: AZURE_TEST_KEY,
    });
  }
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
pid_18181=$!
start "$b" 18182 config_b.json
pid_18182=$!
for _ in $(seq 150); do
  grep -q listening "$tmp/18181.log" && grep -q listening "$tmp/18182.log" && break
  sleep 0.2
done
grep -q listening "$tmp/18181.log" && grep -q listening "$tmp/18182.log" || {
  cat "$tmp/18181.log" "$tmp/18182.log" >&2
  exit 1
}

context=$(printf 'You are a careful coding assistant. %.0s' {1..30})
lua() { # model
  cat <<LUA
wrk.method = "POST"
wrk.body = [==[{"model":"$1","stream":false,"messages":[{"role":"system","content":"$context"},{"role":"user","content":"Explain what this function does and suggest one improvement."}]}]==]
wrk.headers["authorization"] = "Bearer sk-test-key-team-a"
wrk.headers["content-type"] = "application/json"
LUA
}
lua "${MODEL:-chat-text-chunks22}" >"$tmp/json.18181.lua"
lua "${MODEL_B:-${MODEL:-chat-text-chunks22}}" >"$tmp/json.18182.lua"
if [ -n "${GZIP_B:-}" ]; then # B's body gzip-compressed (Content-Encoding: gzip), read from a file
  awk -F'\\[==\\[|\\]==\\]' '/wrk.body/ {printf "%s", $2}' "$tmp/json.18182.lua" | gzip -c >"$tmp/body.gz"
  sed -i '/wrk.body/d' "$tmp/json.18182.lua"
  cat >>"$tmp/json.18182.lua" <<LUA
local f = io.open("$tmp/body.gz", "rb")
wrk.body = f:read("*a")
f:close()
wrk.headers["content-encoding"] = "gzip"
LUA
fi
load() { # port connections seconds
  wrk -t1 -c"$2" -d"$3"s --latency -s "$tmp/json.$1.lua" "http://127.0.0.1:$1/v1/chat/completions"
}
# CPU time of a gateway process (user + system, clock ticks): read beside req/s, since CPU per
# request moves far less with this VM's drifting speed than requests per second do.
ticks() { local pid="pid_$1"; awk '{print $14 + $15}' "/proc/${!pid}/stat"; }
rps() { # port; prints req/s, appends the round's CPU per request to $tmp/cpu.<port>
  local before after out
  before=$(ticks "$1")
  out=$(load "$1" 32 3)
  grep -q "Non-2xx" <<<"$out" && echo "port $1: non-2xx answers: $(grep Non-2xx <<<"$out")" >&2
  after=$(ticks "$1")
  awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" \
    '/requests in/ {printf "%.0f\n", t / hz * 1e6 / $1}' <<<"$out" >>"$tmp/cpu.$1"
  awk '/Requests\/sec/ {print int($2)}' <<<"$out"
}
p50() { load "$1" 1 3 | awk '$1 == "50%" {print $2}'; }
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2}'; }

for port in 18181 18182; do load $port 32 3 >/dev/null; done # warm both
ra=() rb=() la=() lb=() ratios=()
# Each round swaps which goes first: the second of a pair reads ~1% faster (A/A runs).
together() { # both gateways loaded at once: each round's two figures share the VM's moment
  rps 18181 >"$tmp/together.a" &
  rps 18182 >"$tmp/together.b"
  wait $!
  ra+=("$(cat "$tmp/together.a")") rb+=("$(cat "$tmp/together.b")")
}
for i in $(seq "${ROUNDS:-8}"); do
  if [ -n "${TOGETHER:-}" ]; then together
  elif ((i % 2)); then ra+=("$(rps 18181)") rb+=("$(rps 18182)"); else rb+=("$(rps 18182)") ra+=("$(rps 18181)"); fi
done
for i in 1 2 3 4; do
  if ((i % 2)); then la+=("$(p50 18181)") lb+=("$(p50 18182)"); else lb+=("$(p50 18182)") la+=("$(p50 18181)"); fi
done
# This VM's speed drifts by tens of percent within a minute: the ratio of a round's back-to-back
# pair cancels most of that drift, so its median is the figure to read.
for i in "${!ra[@]}"; do ratios+=("$(awk "BEGIN {printf \"%.3f\", ${rb[$i]} / ${ra[$i]}}")"); done
echo "A $a: c=32 ${ra[*]} req/s, median $(median "${ra[@]}"); c=1 p50 ${la[*]}"
echo "B $b: c=32 ${rb[*]} req/s, median $(median "${rb[@]}"); c=1 p50 ${lb[*]}"
echo "B/A per round: ${ratios[*]}; median $(median "${ratios[@]}")"
mapfile -t ca <"$tmp/cpu.18181"
mapfile -t cb <"$tmp/cpu.18182"
echo "CPU per request (µs), A: ${ca[*]}, median $(median "${ca[@]}"); B: ${cb[*]}, median $(median "${cb[@]}")"
# Like req/s, a round's own pair cancels most of the drift: its median is the CPU figure to read.
cpu_ratios=()
for i in "${!ca[@]}"; do cpu_ratios+=("$(awk "BEGIN {printf \"%.3f\", ${cb[$i]} / ${ca[$i]}}")"); done
echo "CPU per request B/A per round: ${cpu_ratios[*]}; median $(median "${cpu_ratios[@]}")"
