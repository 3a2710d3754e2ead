// Two-consumer subscriptions with the stock pulsar-flex client (run by run.sh, ctest
// `pulsar_flex.smoke`), against a running `nereus standalone`. In FAILOVER and KEY_SHARED a
// consumer leaves with CLOSE_CONSUMER (pulsar-flex's unsubscribe()); in the _KILL modes its
// process is SIGKILLed by PID (an abrupt disconnect; the consumer runs in a child process, mode
// HOLDER, started and killed by this one).
//
//   node multi.js <port> FAILOVER     two consumers on one Failover subscription: all 30 units
//       (singles and batches) go to one of them (the active one), in entry order, and none to
//       the other; the active one acks units 0..9 (ACK_RESPONSEs awaited) and closes; the other
//       becomes active and gets exactly units 10..29 (no acked one), in order, then new units.
//
//   node multi.js <port> KEY_SHARED   two consumers on one Key_Shared subscription, 200 single
//       messages over 20 keys (partition_key set by lib.js's producer-side withKeys() shim:
//       pulsar-flex has no keys); each message acked in its handler. Every key goes to exactly
//       one consumer while both are connected, in send order per key, both consumers get keys,
//       every message is delivered once, and the key arrives in the message metadata.
//
//   node multi.js <port> FAILOVER_KILL | KEY_SHARED_KILL   consumers a-holder (child process) and
//       b-other, 30 keyed singles; a-holder acks its units 0..9 (confirmed) and is SIGKILLed;
//       b-other then gets exactly a-holder's unacked units (Failover: 10..29; Key_Shared:
//       a-holder's keys move over, redelivered with redelivery_count 1), no acked one, none twice.
'use strict';
const L = require('./lib');

const port = process.argv[2];
const mode = process.argv[3];
const T = L.Consumer.SUB_TYPES;
L.quietUnhandled();

const entryNo = (r) => Number(r.entry.split(':')[1]);
function inEntryOrder(recs, what) {
  for (let k = 1; k < recs.length; k++) {
    L.check(entryNo(recs[k]) >= entryNo(recs[k - 1]), `${what}: out of entry order: ${recs[k - 1].entry} then ${recs[k].entry}`);
  }
}
const units = (recs) => new Set(recs.map((r) => r.unit.u));
const sizeOf = (u) => (u % 7 === 3 ? 3 : 1);

async function failover() {
  L.deadline(40000, 'failover');
  const topic = 'flex-multi-failover';
  const opts = { subscription: 'fo-sub', subType: T.FAILOVER };
  const a = await L.collectingConsumer(port, topic, { ...opts, name: 'fo-a' });
  const b = await L.collectingConsumer(port, topic, { ...opts, name: 'fo-b' });
  const producer = new L.Producer({ ...L.base(port, topic), producerAccessMode: L.Producer.ACCESS_MODES.SHARED });
  await producer.create();
  for (let u = 0; u < 30; u++) await L.sendUnit(producer, 'f', u, sizeOf(u));
  const total = () => units(a.delivered).size + units(b.delivered).size;
  L.check(await L.waitFor(() => total() >= 30, 15000), `failover: ${total()}/30 units delivered`);
  await L.sleep(1000);
  const [active, standby] = a.delivered.length > 0 ? [a, b] : [b, a];
  const aName = active === a ? 'fo-a' : 'fo-b';
  L.check(standby.delivered.length === 0, `failover: both consumers got messages (a ${a.delivered.length}, b ${b.delivered.length})`);
  let msgs = 0;
  for (let u = 0; u < 30; u++) msgs += sizeOf(u);
  L.check(active.delivered.length === msgs, `failover: ${active.delivered.length} messages delivered for ${msgs} sent`);
  inEntryOrder(active.delivered, 'failover active');
  // Ack units 0..9 from the active consumer and wait for every ACK_RESPONSE.
  for (const r of active.delivered.filter((r) => r.unit.u < 10 && r.unit.i === 0)) {
    const cmd = await r.ack();
    L.check(cmd && (cmd.error === undefined || cmd.error === null), `failover: ack of unit ${r.unit.u} not confirmed`);
  }
  await active.unsubscribe(); // pulsar-flex's unsubscribe() is CLOSE_CONSUMER + closing its connection
  const want = [];
  for (let u = 10; u < 30; u++) want.push(u);
  L.check(await L.waitFor(() => want.every((u) => units(standby.delivered).has(u)), 15000, 100),
    `failover: after ${aName} closed the other consumer got ${[...units(standby.delivered)].sort((x, y) => x - y)}, expected 10..29`);
  await L.sleep(1500);
  const got = units(standby.delivered);
  L.check([...got].every((u) => u >= 10), `failover: acked units came again: ${[...got].filter((u) => u < 10)}`);
  L.check(standby.delivered.length === want.reduce((s, u) => s + sizeOf(u), 0), `failover: ${standby.delivered.length} messages for 20 units (duplicates?)`);
  inEntryOrder(standby.delivered, 'failover new active');
  for (let u = 30; u < 35; u++) await L.sendUnit(producer, 'f', u, sizeOf(u));
  L.check(await L.waitFor(() => [30, 31, 32, 33, 34].every((u) => units(standby.delivered).has(u)), 10000, 100), 'failover: new messages did not reach the new active consumer');
  console.log(`failover: OK (${aName} active first; after it closed the other got units 10..29 and the new ones)`);
  await producer.close();
  await standby.unsubscribe();
}

async function keyShared() {
  L.deadline(40000, 'key_shared');
  L.withKeys();
  const topic = 'flex-multi-keyshared';
  const KEYS = 20;
  const N = 200;
  const opts = { subscription: 'ks-sub', subType: T.KEY_SHARED, onMessage: (rec, ack) => ack() };
  const a = await L.collectingConsumer(port, topic, { ...opts, name: 'ks-a' });
  const b = await L.collectingConsumer(port, topic, { ...opts, name: 'ks-b' });
  const producer = new L.Producer({ ...L.base(port, topic), producerAccessMode: L.Producer.ACCESS_MODES.SHARED });
  await producer.create();
  const sends = [];
  for (let u = 0; u < N; u++) {
    sends.push(producer.sendMessage({ payload: L.payloadOf('k', u, 0, 1), properties: { u: String(u), __key: `key-${u % KEYS}` } }));
    if (sends.length >= 8) await sends.shift();
  }
  await Promise.all(sends);
  const total = () => a.delivered.length + b.delivered.length;
  L.check(await L.waitFor(() => units(a.delivered).size + units(b.delivered).size >= N, 20000, 100), `key_shared: ${total()}/${N} delivered`);
  await L.sleep(1000);
  const owner = new Map();
  for (const [name, c] of [['ks-a', a], ['ks-b', b]]) {
    const lastPerKey = new Map();
    for (const r of c.delivered) {
      const key = `key-${r.unit.u % KEYS}`;
      L.check(r.key === key, `key_shared: message ${r.unit.u} arrived with partition_key ${r.key}, sent ${key}`);
      L.check(!owner.has(key) || owner.get(key) === name, `key_shared: ${key} went to both consumers`);
      owner.set(key, name);
      L.check(!lastPerKey.has(key) || lastPerKey.get(key) < r.unit.u, `key_shared: ${key} out of order on ${name}`);
      lastPerKey.set(key, r.unit.u);
    }
  }
  L.check(total() === N, `key_shared: ${total()} deliveries for ${N} messages (duplicates?)`);
  const na = [...owner.values()].filter((x) => x === 'ks-a').length;
  L.check(na > 0 && na < KEYS, `key_shared: all ${KEYS} keys went to one consumer (ks-a has ${na})`);
  console.log(`key_shared: OK (${KEYS} keys: ${na} on ks-a, ${KEYS - na} on ks-b; each key on one consumer, in order)`);
  await producer.close();
  await a.unsubscribe();
  await b.unsubscribe();
}

// Holds one consumer in a child process (multi.js <port> HOLDER <type> <topic> <sub>) so the
// parent can SIGKILL it by PID: an abrupt disconnect, no CLOSE_CONSUMER.
async function holder() {
  const [type, topic, sub] = process.argv.slice(4);
  process.on('disconnect', () => process.exit(0)); // the parent is gone: do not linger
  const c = await L.collectingConsumer(port, topic, { subscription: sub, subType: T[type], name: 'a-holder' });
  process.send('subscribed');
  process.on('message', async (m) => {
    if (m !== 'ack') return;
    for (const r of c.delivered.filter((r) => r.unit.u < 10 && r.unit.i === 0)) {
      const cmd = await r.ack();
      if (!cmd || (cmd.error !== undefined && cmd.error !== null)) process.exit(1);
    }
    process.send({ got: [...units(c.delivered)] });
  });
  await L.sleep(60000);
}

// FAILOVER_KILL / KEY_SHARED_KILL: consumer a-holder (child process) and b-other share a
// subscription; 30 keyed single messages (keys k0..k9); a-holder acks its units 0..9 (confirmed),
// then its process is SIGKILLed. b-other must then get every unit a-holder had not acked
// (Failover: it becomes active and gets 10..29; Key_Shared: a-holder's keys move to it), none
// that a-holder acked, none twice; on Key_Shared the returned ones carry redelivery_count 1.
async function killed(type) {
  L.deadline(45000, `${type}_KILL`);
  L.withKeys();
  const { fork } = require('child_process');
  const topic = `flex-multi-kill-${type.toLowerCase()}`;
  const sub = `kill-${type.toLowerCase()}`;
  const child = fork(__filename, [port, 'HOLDER', type, topic, sub]);
  let childKilled = false;
  const stopChild = () => {
    if (childKilled || child.exitCode !== null || child.signalCode !== null) return;
    childKilled = true;
    try { process.kill(child.pid, 'SIGKILL'); } catch (e) { /* gone */ }
  };
  process.on('exit', stopChild);
  process.on('SIGTERM', () => { stopChild(); process.exit(3); }); // `timeout` in run.sh
  await new Promise((r) => child.once('message', r));
  const b = await L.collectingConsumer(port, topic, { subscription: sub, subType: T[type], name: 'b-other' });
  const producer = new L.Producer({ ...L.base(port, topic), producerAccessMode: L.Producer.ACCESS_MODES.SHARED });
  await producer.create();
  for (let u = 0; u < 30; u++) await producer.sendMessage({ payload: L.payloadOf('x', u, 0, 1), properties: { u: String(u), __key: `k${u % 10}` } });
  await L.sleep(2500); // both consumers poll their receive queues once a second
  child.send('ack');
  const res = await new Promise((r) => child.once('message', r));
  const heldByA = new Set(res.got);
  const bBefore = units(b.delivered);
  L.check(heldByA.size + bBefore.size === 30, `${type}_KILL: ${heldByA.size} + ${bBefore.size} units delivered before the kill, 30 sent`);
  // doc/broker.md: the active Failover consumer has the lowest priority level, then the
  // smallest name, so a-holder is the active one.
  if (type === 'FAILOVER') L.check(heldByA.size === 30, `${type}_KILL: a-holder (smallest name) should be the active consumer; it got ${heldByA.size}, b-other ${bBefore.size}`);
  stopChild(); // SIGKILL by PID: an abrupt disconnect
  const ackedByA = [...heldByA].filter((u) => u < 10);
  const expected = [...heldByA].filter((u) => u >= 10);
  const ok = await L.waitFor(() => expected.every((u) => units(b.delivered).has(u)), 20000, 100);
  await L.sleep(1000);
  const after = b.delivered.filter((r) => !bBefore.has(r.unit.u));
  const got = units(after);
  L.check(ok, `${type}_KILL: after a-holder was killed b-other got ${[...got].sort((x, y) => x - y)}, expected ${expected.sort((x, y) => x - y)}`);
  L.check(ackedByA.every((u) => !got.has(u)), `${type}_KILL: units acked by the killed consumer came again: ${ackedByA.filter((u) => got.has(u))}`);
  L.check(after.length === got.size && [...got].every((u) => heldByA.has(u)), `${type}_KILL: b-other got duplicates or foreign units: ${after.map((r) => r.unit.u)}`);
  if (type === 'KEY_SHARED') {
    const rc = after.filter((r) => r.redeliveryCount !== 1).map((r) => [r.unit.u, r.redeliveryCount]);
    L.check(rc.length === 0, `${type}_KILL: returned messages not at redelivery_count 1: ${JSON.stringify(rc)}`);
  }
  console.log(`${type.toLowerCase()}_kill: OK (a-holder had ${heldByA.size} units, acked ${ackedByA.length}, SIGKILLed; b-other got the other ${got.size})`);
  await producer.close();
  await b.unsubscribe();
}

const modes = {
  FAILOVER: failover,
  KEY_SHARED: keyShared,
  FAILOVER_KILL: () => killed('FAILOVER'),
  KEY_SHARED_KILL: () => killed('KEY_SHARED'),
  HOLDER: holder,
};
(modes[mode] || (() => L.fail(`unknown mode ${mode}`)))()
  .then(() => process.exit(0))
  .catch((e) => {
    console.log(`FAIL: ${mode}: ${e && e.stack ? e.stack : e}`);
    process.exit(2);
  });
