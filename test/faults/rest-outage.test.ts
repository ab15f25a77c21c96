/**
 * A rest sink whose target answers 503 for a while (docs/runtime.md §3.5): with `enableCache`, every row is kept and
 * resent in order once the target accepts again; without a cache at rule qos 1, the failed send is retried and the
 * checkpoint covering it waits, so the source does not acknowledge it and nothing is lost; at qos 0 without a cache,
 * eKuiper's behaviour: the refused rows are given up. Eddy runs as a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runRestOutage } from '../helpers/rest-outage.js';

test('rest sink target answering 503 for a while, with the cache: every row arrives, in order', async (t) => {
  const count = 2000;
  const r = await runRestOutage({ count, rate: 1000, outageMs: 2000, cache: true, ruleQos: 0 });
  t.diagnostic(
    `sent ${count}, delivered ${r.distinct}, answered 503: ${r.refused}, duplicates ${r.accepted.length - r.distinct}`,
  );
  assert.ok(r.refused > 0, 'the target refused rows for a while');
  assert.equal(r.distinct, count);
  for (let i = 1; i < r.accepted.length; i++)
    assert.ok(r.accepted[i] > r.accepted[i - 1], `in order at ${i}: ${r.accepted[i - 1]} then ${r.accepted[i]}`);
});

test('rest sink target answering 503 for a while, no cache, rule qos 1: refused sends are retried, nothing lost', async (t) => {
  const count = 3000;
  const r = await runRestOutage({ count, rate: 1000, outageMs: 3000, cache: false, ruleQos: 1 });
  t.diagnostic(
    `sent ${count}, delivered ${r.distinct}, lost ${count - r.distinct}, answered 503: ${r.refused}, duplicates ${r.accepted.length - r.distinct}`,
  );
  assert.ok(r.refused > 0, 'the target refused rows for a while');
  assert.equal(r.distinct, count);
});

test('rest sink target answering 503 for a while, no cache, rule qos 0: refused rows are given up (eKuiper)', async (t) => {
  const count = 1500;
  const r = await runRestOutage({ count, rate: 1000, outageMs: 1500, cache: false, ruleQos: 0 });
  t.diagnostic(`sent ${count}, delivered ${r.distinct}, lost ${count - r.distinct}, answered 503: ${r.refused}`);
  assert.ok(r.refused > 0, 'the target refused rows for a while');
  assert.equal(r.distinct, count - r.refused);
});
