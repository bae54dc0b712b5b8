// Drives flakegen's no_std build, a wasm module, as a page would: gives it
// a clock, issues IDs, and checks them. Exits non-zero on any failure.
//
//   node tests/no-std/run.mjs target/no-std/wasm32-unknown-unknown/release/flakegen_no_std.wasm
import { readFileSync } from 'node:fs';

const [path] = process.argv.slice(2);
if (!path) {
  console.error('usage: node run.mjs <flakegen_no_std.wasm>');
  process.exit(2);
}

// The page's clock, which the checks below step back once.
let stepBack = 0;
const nowMillis = () => performance.timeOrigin + performance.now() - stepBack;

const { instance } = await WebAssembly.instantiate(readFileSync(path), {
  page: { now_millis: nowMillis },
});
const x = instance.exports;
const WOULD_BLOCK = -1n;
const WORKER_IN_USE = 2;

function fail(message) {
  console.error(`no_std: ${message}`);
  process.exit(1);
}

const worker = 7;
if (x.flakegen_start(worker) !== 0) fail('the generator was not built');
const again = x.flakegen_build_again(worker);
if (again !== WORKER_IN_USE) {
  fail(`a second generator on worker ${worker} was not refused as in use (code ${again})`);
}

// Issues `count` IDs; a refusal to wait is waited out here, by spinning on
// the page's clock, as a page's own loop would.
let waits = 0;
function issue(count) {
  const ids = [];
  while (ids.length < count) {
    const id = x.flakegen_next();
    if (id === WOULD_BLOCK) {
      waits += 1;
      const until = nowMillis() + Number(x.flakegen_last_wait()) / 1e6;
      while (nowMillis() < until) {}
      continue;
    }
    if (id < 0n) fail(`next_id failed with code ${id}`);
    ids.push(id);
  }
  return ids;
}

const started = Date.now();
const first = issue(200_000);
// The clock steps back 5 ms, as NTP can: no ID repeats, none goes back.
stepBack = 5;
const blockedBefore = waits;
const second = issue(20_000);
const ids = first.concat(second);

for (let i = 1; i < ids.length; i++) {
  if (ids[i] <= ids[i - 1]) fail(`ID ${i} (${ids[i]}) is not above the one before (${ids[i - 1]})`);
}
if (new Set(ids).size !== ids.length) fail('an ID was issued twice');
for (const id of [ids[0], ids[ids.length >> 1], ids[ids.length - 1]]) {
  if (x.flakegen_worker_of(id) !== BigInt(worker)) fail(`ID ${id} does not decode to worker ${worker}`);
  if (x.flakegen_base32_round_trip(id) !== 1) fail(`ID ${id} does not come back from base32`);
}
// Twitter's layout: ms since 2010-11-04T01:42:54.657Z above 22 bits.
const issuedAt = Number(ids[0] >> 22n) + 1288834974657;
if (Math.abs(issuedAt - started) > 1000) fail(`the first ID's time is ${issuedAt}, the page's ${started}`);
if (waits === blockedBefore) fail('a clock stepped back 5 ms was not waited out');

console.log(
  `no_std (wasm32, no standard library): ${ids.length} IDs on worker ${worker}, unique and ` +
    `increasing, decoded and through base32; a second generator on the worker refused; ` +
    `a clock stepped back 5 ms waited out (${waits} refusals to wait, each waited by the page)`,
);
