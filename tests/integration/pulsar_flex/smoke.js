// Smoke test with the stock pulsar-flex client against a running `nereus standalone` (run by
// run.sh, ctest `pulsar_flex.smoke`), one subscription type per run:
//   node smoke.js <port> SHARED|EXCLUSIVE|FAILOVER|KEY_SHARED
// Subscribes (durable), produces 'one' (single, with a property), the batch ['two', 'three'] and
// 'four' (single); nacks 'two' on its first delivery (REDELIVER_UNACKNOWLEDGED_MESSAGES) and acks
// everything else, awaiting each ACK_RESPONSE (pulsar-flex's ack promise resolves only on it).
// Checks: all four messages arrive, 'one' with its property; 'two' comes again with
// redelivery_count 1 on Shared and Key_Shared, 0 on Exclusive and Failover (Pulsar tracks
// redeliveries for Shared/Key_Shared only); every ack issued was confirmed.
// pulsar-flex acks by entry id (no batch index), so acking 'three' acks the whole batch entry.
'use strict';
const { Producer, Consumer, logLevel } = require('pulsar-flex');
const port = process.argv[2];
const type = process.argv[3] || 'SHARED';
const subType = Consumer.SUB_TYPES[type];
const base = { topic: `persistent://public/default/flex-smoke-${type}`, discoveryServers: [`127.0.0.1:${port}`], logLevel: logLevel.ERROR };
const expectedRedelivery = type === 'SHARED' || type === 'KEY_SHARED' ? 1 : 0;
(async () => {
  const timer = setTimeout(() => { console.log(`${type}: TIMEOUT`); process.exit(3); }, 30000);
  const consumer = new Consumer({ ...base, subscription: `flex-sub-${type}`, subType, consumerName: 'c1', receiveQueueSize: 100 });
  await consumer.subscribe();
  const got = [];
  const props = {};
  let nacked = false;
  let redelivered = null;
  let acksIssued = 0;
  let acksConfirmed = 0;
  await consumer.run({ autoAck: false, onMessage: async ({ message, redeliveryCount, properties, ack }) => {
    const s = message.toString();
    if (s === 'two' && !nacked) { nacked = true; await ack({ type: Consumer.ACK_TYPES.NEGATIVE }); return; }
    if (s === 'two') redelivered = redeliveryCount || 0;
    got.push(s);
    props[s] = properties;
    acksIssued++;
    const r = await ack();
    if (r && (r.error === undefined || r.error === null)) acksConfirmed++;
  }});
  const producer = new Producer({ ...base, producerAccessMode: Producer.ACCESS_MODES.SHARED });
  await producer.create();
  await producer.sendMessage({ payload: 'one', properties: { k: 'v' } });
  await producer.sendBatch({ messages: [{ payload: 'two' }, { payload: 'three' }] });
  await producer.sendMessage({ payload: 'four' });
  const all = () => ['one', 'two', 'three', 'four'].every((s) => got.includes(s));
  const until = Date.now() + 20000;
  while (!all() && Date.now() < until) await new Promise(r => setTimeout(r, 100));
  await new Promise(r => setTimeout(r, 300));
  console.log(type, 'GOT', JSON.stringify([...got].sort()), 'redelivered', redelivered, `acks ${acksConfirmed}/${acksIssued} confirmed`);
  const problems = [];
  if (!all()) problems.push('not every message arrived');
  if (got.some((s) => !['one', 'two', 'three', 'four'].includes(s))) problems.push('unexpected message');
  if (!props.one || props.one.k !== 'v') problems.push(`'one' came with properties ${JSON.stringify(props.one)}`);
  if (redelivered !== expectedRedelivery) problems.push(`'two' redelivered with redelivery_count ${redelivered}, expected ${expectedRedelivery}`);
  if (acksConfirmed !== acksIssued) problems.push('an ack was not confirmed');
  await producer.close();
  await consumer.unsubscribe();
  clearTimeout(timer);
  for (const p of problems) console.log(`FAIL: ${type}: ${p}`);
  process.exit(problems.length ? 1 : 0);
})().catch(e => { console.log('ERR', e); process.exit(2); });
