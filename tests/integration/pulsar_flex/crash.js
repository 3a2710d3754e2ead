// Crash/restart test with the stock pulsar-flex client, driven by crash.sh (which starts,
// SIGKILLs and restarts `nereus standalone` by PID). Three modes:
//
//   node crash.js produce <port> <dir> <broker-pid>   before the crash: subscribes durable Shared, Exclusive,
//       Failover and Key_Shared subscriptions plus an "audit" subscription that never consumes;
//       produces singles and batches with 4 sends in flight, and consumes on the four
//       subscriptions, acking a known ~2/3 of the send units (acks in flight, not awaited in the
//       handler) and, on Shared, nacking every 5th unit once and leaving its redelivery unacked.
//       Every event goes to <dir>/journal (synchronous writes, so nothing recorded is lost when
//       crash.sh SIGKILLs this process): sent, receipted (sendMessage/sendBatch resolved = the
//       SEND_RECEIPT arrived), ack requested, ack confirmed (ack promise resolved = the
//       ACK_RESPONSE arrived without error), nack. Once survive is ready and there are 100
//       receipts and 40 confirmed acks, it SIGKILLs the broker by the PID crash.sh passed, at a
//       moment with acks (>= 3) and sends (>= 1) in flight (a plain kill after 10 s if no such
//       moment comes), writes <dir>/mark.produce and carries on until crash.sh SIGKILLs it.
//
//   node crash.js survive <port> <dir>   runs across the crash: a Shared consumer and a producer
//       on their own topic; 20 units sent and received, the even ones acked (confirmed), then
//       <dir>/mark.survivor. After crash.sh writes <dir>/mark.restarted, sends 10 more units with
//       the same Producer object and expects pulsar-flex's own reconnect (consumer and producer)
//       to bring back exactly the unacked units plus the new ones, and no confirmed-acked unit.
//
//   node crash.js verify <port> <dir>    after the restart (same port, same data directory): a
//       fresh consumer on each of the four subscriptions must get exactly the receipted units
//       whose ack was not confirmed (every receipted-and-unacked unit, no confirmed-acked one;
//       units sent but not receipted, or acked without a confirmation, may or may not come),
//       each unit complete (all messages of a batch), with its properties, and no entry twice;
//       Exclusive and Failover in entry order. The audit subscription and a new subscription
//       from Earliest must each get every receipted unit. Redelivery counts of units nacked
//       before the crash are reported: one nacked before a later confirmed ack must come back
//       >= 1 (the broker persists counts; a reset fails the test); one nacked after the last
//       confirmed ack may come back at 0 (the broker writes counts with the cursor's next CAS).
'use strict';
const fs = require('fs');
const path = require('path');
const L = require('./lib');

const [mode, port, dir] = process.argv.slice(2);
if (!mode || !port || !dir) {
  console.log('usage: node crash.js produce|survive|verify <port> <dir> [broker-pid]');
  process.exit(2);
}
L.quietUnhandled();

const TOPIC = 'flex-crash';
const TAG = 'c';
const T = L.Consumer.SUB_TYPES;
const SUBS = [
  { name: 'crash-shared', type: T.SHARED, idx: 0 },
  { name: 'crash-exclusive', type: T.EXCLUSIVE, idx: 1 },
  { name: 'crash-failover', type: T.FAILOVER, idx: 2 },
  { name: 'crash-keyshared', type: T.KEY_SHARED, idx: 3 },
];
const AUDIT = 'crash-audit';
const MAX_UNITS = 20000; // bound; the broker is killed long before
const unitSize = (u) => (u % 4 === 3 ? 2 + (u % 5) : 1);
// The per-subscription ack plan: ~2/3 of the units are acked, the rest kept.
const plannedAck = (u, s) => (u * 7 + s * 5) % 3 !== 0;
// Shared only: every 5th unit is nacked on first delivery, its redelivery is kept unacked.
const plannedNack = (u, s) => s === 0 && u % 5 === 0;
const journalPath = path.join(dir, 'journal');
// Receipts and confirmed acks before the kill (FLEX_CRASH_SCALE multiplies both, for manual
// longer runs; ctest uses 1).
const SCALE = Math.max(1, Number(process.env.FLEX_CRASH_SCALE || 1));
const MIN_RECEIPTS = 100 * SCALE;
const MIN_ACKS = 40 * SCALE;

async function produce() {
  L.deadline(60000 * SCALE, 'produce');
  const brokerPid = Number(process.argv[5]);
  L.check(brokerPid > 0, 'produce: needs the broker PID');
  const j = new L.Journal(journalPath);
  let receipts = 0;
  let acksOk = 0;
  let acksInFlight = 0;
  let sendsInFlight = 0;
  let killed = false;
  let armedAt = 0;
  // SIGKILLs the broker (by the PID crash.sh gave) right after a burst of acks was written, with
  // sends in flight too, so the kill lands mid-run; falls back to a plain kill if no such
  // moment comes within 10 s of the thresholds being reached.
  const maybeKill = () => {
    if (killed || receipts < MIN_RECEIPTS || acksOk < MIN_ACKS) return;
    if (!armedAt) {
      if (!fs.existsSync(path.join(dir, 'mark.survivor'))) return; // survive is under way first
      armedAt = Date.now();
    }
    const midRun = acksInFlight >= 3 && sendsInFlight >= 1;
    if (!midRun && Date.now() - armedAt < 10000) return;
    killed = true;
    j.write({ t: 'kill', acksInFlight, sendsInFlight, receipts, acksOk });
    process.kill(brokerPid, 'SIGKILL');
    fs.writeFileSync(path.join(dir, 'mark.produce'), `killed with ${acksInFlight} acks and ${sendsInFlight} sends in flight\n`);
  };

  // The audit subscription is created (durably) before anything is produced and never consumes.
  const audit = new L.Consumer({ ...L.base(port, TOPIC), subscription: AUDIT, subType: T.SHARED, consumerName: 'audit', receiveQueueSize: 10 });
  await audit.subscribe();

  for (const s of SUBS) {
    const seen = new Set();
    await L.collectingConsumer(port, TOPIC, {
      subscription: s.name,
      subType: s.type,
      name: `pre-${s.idx}`,
      onMessage: (rec, ack) => {
        j.write({ t: 'dlv', sub: s.name, p: rec.payload, e: rec.entry, rc: rec.redeliveryCount });
        const { u, i } = rec.unit;
        if (i !== 0) return; // pulsar-flex acks the entry: act once per unit
        if (plannedNack(u, s.idx) && !seen.has(u)) {
          seen.add(u);
          j.write({ t: 'nack', sub: s.name, u });
          ack({ type: L.Consumer.ACK_TYPES.NEGATIVE }).catch(() => {});
          return;
        }
        if (plannedNack(u, s.idx)) return; // the redelivery of a nacked unit stays unacked
        if (!plannedAck(u, s.idx)) return;
        j.write({ t: 'ackreq', sub: s.name, u });
        acksInFlight++;
        ack().then(
          (cmd) => {
            acksInFlight--;
            if (cmd && (cmd.error === undefined || cmd.error === null)) {
              j.write({ t: 'ackok', sub: s.name, u });
              acksOk++;
            }
          },
          () => {}
        );
        maybeKill();
      },
    });
  }

  const producer = new L.Producer({ ...L.base(port, TOPIC), producerAccessMode: L.Producer.ACCESS_MODES.SHARED });
  await producer.create();
  let next = 0;
  const loop = async () => {
    while (next < MAX_UNITS) {
      const u = next++;
      const n = unitSize(u);
      j.write({ t: 'sent', u, n });
      sendsInFlight++;
      await L.sendUnit(producer, TAG, u, n);
      sendsInFlight--;
      j.write({ t: 'rcpt', u, n });
      receipts++;
      maybeKill();
    }
  };
  await Promise.all([loop(), loop(), loop(), loop()]);
  console.log('produce: MAX_UNITS reached before the kill');
  await L.sleep(60000);
}

async function survive() {
  L.deadline(70000 * SCALE, 'survive');
  const topic = 'flex-reconnect';
  const c = await L.collectingConsumer(port, topic, { subscription: 'reconnect-sub', subType: T.SHARED, name: 'survivor' });
  const producer = new L.Producer({ ...L.base(port, topic), producerAccessMode: L.Producer.ACCESS_MODES.SHARED });
  await producer.create();
  for (let u = 0; u < 20; u++) await L.sendUnit(producer, 'r', u, u % 6 === 5 ? 3 : 1);
  const units = (recs) => new Set(recs.filter((r) => r.unit.i === 0).map((r) => r.unit.u));
  L.check(await L.waitFor(() => units(c.delivered).size === 20, 15000), `survive: only ${units(c.delivered).size}/20 units delivered before the crash`);
  // Ack the even units outside the handler (pulsar-flex's ack() may be kept and called later)
  // and wait for every ACK_RESPONSE.
  const acked = c.delivered.filter((r) => r.unit.i === 0 && r.unit.u % 2 === 0).map((r) => ({ u: r.unit.u, ack: r.ack }));
  for (const { u, ack } of acked) {
    const cmd = await ack();
    L.check(cmd && (cmd.error === undefined || cmd.error === null), `survive: ack of unit ${u} not confirmed`);
  }
  const ackedUnits = new Set(acked.map((a) => a.u));
  // Everything delivered from here on came after the crash (produce kills the broker only once
  // this mark exists, and nothing more is sent to this topic before the restart).
  const from = c.delivered.length;
  fs.writeFileSync(path.join(dir, 'mark.survivor'), 'ready\n');
  L.check(await L.waitFor(() => fs.existsSync(path.join(dir, 'mark.restarted')), 40000 * SCALE, 100), 'survive: the broker was not restarted in time');
  const t0 = Date.now();
  for (let u = 20; u < 30; u++) await L.sendUnit(producer, 'r', u, u % 6 === 5 ? 3 : 1);
  const sentAfter = Date.now() - t0;
  const expected = new Set();
  for (let u = 0; u < 30; u++) if (u >= 20 || !ackedUnits.has(u)) expected.add(u);
  const after = () => c.delivered.slice(from);
  const ok = await L.waitFor(() => [...expected].every((u) => units(after()).has(u)), 30000, 100);
  const got = units(after());
  L.check(ok, `survive: after the restart the reconnected consumer got ${[...got].sort((a, b) => a - b)} but expected ${[...expected].sort((a, b) => a - b)}`);
  await L.sleep(1500);
  const bad = [...units(after())].filter((u) => ackedUnits.has(u));
  L.check(bad.length === 0, `survive: confirmed-acked units redelivered after the restart: ${bad}`);
  L.check(c.getState() === L.Consumer.CONSUMER_STATES.ACTIVE, `survive: consumer state ${c.getState()}`);
  for (const u of expected) {
    const n = u % 6 === 5 ? 3 : 1;
    const msgs = after().filter((r) => r.unit.u === u);
    L.check(new Set(msgs.map((r) => r.unit.i)).size === n, `survive: unit ${u} incomplete after the restart`);
  }
  console.log(`survive: OK (consumer and producer reconnected by pulsar-flex; post-restart sends took ${sentAfter} ms; ${got.size} units redelivered/delivered, 0 acked ones)`);
  await producer.close().catch(() => {});
  await c.unsubscribe().catch(() => {});
  process.exit(0);
}

async function verify() {
  L.deadline(60000 * SCALE, 'verify');
  const events = L.Journal.read(journalPath);
  const sent = new Map();
  const rcpt = new Map();
  const ackreq = new Map(SUBS.map((s) => [s.name, new Set()]));
  const ackok = new Map(SUBS.map((s) => [s.name, new Set()]));
  const nacked = new Map(SUBS.map((s) => [s.name, new Set()]));
  for (const ev of events) {
    if (ev.t === 'sent') sent.set(ev.u, ev.n);
    else if (ev.t === 'rcpt') rcpt.set(ev.u, ev.n);
    else if (ev.t === 'ackreq') ackreq.get(ev.sub).add(ev.u);
    else if (ev.t === 'ackok') ackok.get(ev.sub).add(ev.u);
    else if (ev.t === 'nack') nacked.get(ev.sub).add(ev.u);
  }
  const inflightSends = [...sent.keys()].filter((u) => !rcpt.has(u)).length;
  const inflightAcks = SUBS.reduce((a, s) => a + [...ackreq.get(s.name)].filter((u) => !ackok.get(s.name).has(u)).length, 0);
  console.log(`verify: before the kill ${sent.size} units sent, ${rcpt.size} receipted (${inflightSends} in flight), ` +
    SUBS.map((s) => `${s.name} ${ackok.get(s.name).size} acks confirmed`).join(', ') + `, ${inflightAcks} acks in flight`);
  L.check(rcpt.size >= MIN_RECEIPTS, `verify: only ${rcpt.size} receipts recorded before the kill`);

  L.withInitialPosition();
  const consumers = new Map();
  await Promise.all([
    ...SUBS.map(async (s) => consumers.set(s.name, await L.collectingConsumer(port, TOPIC, { subscription: s.name, subType: s.type, name: `post-${s.idx}` }))),
    (async () => consumers.set(AUDIT, await L.collectingConsumer(port, TOPIC, { subscription: AUDIT, subType: T.SHARED, name: 'audit-post' })))(),
    (async () => consumers.set('earliest', await L.collectingConsumer(port, TOPIC, { subscription: `crash-earliest-${process.pid}`, subType: T.EXCLUSIVE, name: 'earliest', initialPosition: L.Consumer.INITIAL_POSITION.EARLIEST })))(),
  ]);

  const mustSee = (name) => {
    if (name === AUDIT || name === 'earliest') return [...rcpt.keys()];
    return [...rcpt.keys()].filter((u) => !ackreq.get(name).has(u));
  };
  const unitsOf = (c) => new Set(c.delivered.map((r) => r.unit.u));
  // Wait until every consumer has its must-see units, then 2 s more for anything extra.
  const complete = () => [...consumers].every(([name, c]) => {
    const got = unitsOf(c);
    return mustSee(name).every((u) => got.has(u));
  });
  await L.waitFor(complete, 30000 * SCALE, 100);
  let lastCount = -1;
  while (true) {
    const count = [...consumers.values()].reduce((a, c) => a + c.delivered.length, 0);
    if (count === lastCount) break;
    lastCount = count;
    await L.sleep(2000);
  }

  const failures = [];
  for (const [name, c] of consumers) {
    const got = unitsOf(c);
    const missing = mustSee(name).filter((u) => !got.has(u));
    if (missing.length) failures.push(`${name}: ${missing.length} receipted units, none of them ever acked, not delivered after the restart: ${missing.slice(0, 20)}`);
    if (ackok.has(name)) {
      const again = [...got].filter((u) => ackok.get(name).has(u));
      if (again.length) failures.push(`${name}: ${again.length} units whose ack was confirmed (ACK_RESPONSE) were redelivered: ${again.slice(0, 20)}`);
    }
    const phantom = [...got].filter((u) => !sent.has(u));
    if (phantom.length) failures.push(`${name}: units never sent were delivered: ${phantom.slice(0, 20)}`);
    const byEntry = new Map();
    for (const r of c.delivered) {
      if (!r.unit || r.unit.tag !== TAG) { failures.push(`${name}: foreign payload ${r.payload}`); continue; }
      const key = `${r.entry}#${r.unit.i}`;
      if (byEntry.has(key)) failures.push(`${name}: entry ${r.entry} message ${r.unit.i} delivered twice to one fresh consumer`);
      byEntry.set(key, r);
      if (r.properties.u !== String(r.unit.u)) failures.push(`${name}: unit ${r.unit.u} came with properties ${JSON.stringify(r.properties)}`);
    }
    for (const u of got) {
      const msgs = c.delivered.filter((r) => r.unit.u === u);
      const n = sent.get(u);
      const idx = new Set(msgs.map((r) => r.unit.i));
      if (idx.size !== n) failures.push(`${name}: unit ${u} (${n} messages) came incomplete: ${[...idx]}`);
      if (new Set(msgs.map((r) => r.entry)).size !== 1) failures.push(`${name}: unit ${u} spread over entries ${msgs.map((r) => r.entry)}`);
    }
    const sub = SUBS.find((s) => s.name === name);
    if (name === 'earliest' || (sub && (sub.type === T.EXCLUSIVE || sub.type === T.FAILOVER))) {
      const entries = c.delivered.map((r) => Number(r.entry.split(':')[1]));
      for (let k = 1; k < entries.length; k++) {
        if (entries[k] < entries[k - 1]) { failures.push(`${name}: out of entry order at ${k}: ${entries[k - 1]} then ${entries[k]}`); break; }
      }
    }
    console.log(`verify: ${name}: ${got.size} units after the restart (must see ${mustSee(name).length})`);
  }

  // Redelivery counts of units nacked before the crash (Shared): tolerant. The broker writes a
  // recorded redelivery with the cursor's next CAS (ledger/managed_cursor.h: "after a crash a
  // count may lag, never run ahead"), so a count must survive when an ack requested after the
  // nack (same connection, so processed after the REDELIVER) was confirmed; a nack with no
  // confirmed ack after it may come back with 0.
  const shared = consumers.get('crash-shared');
  const nackAt = new Map();
  const lastConfirmedReq = { at: -1 };
  const reqAt = new Map();
  events.forEach((ev, k) => {
    if (ev.sub !== 'crash-shared') return;
    if (ev.t === 'nack') nackAt.set(ev.u, k);
    if (ev.t === 'ackreq') reqAt.set(ev.u, k);
    if (ev.t === 'ackok' && reqAt.has(ev.u)) lastConfirmedReq.at = Math.max(lastConfirmedReq.at, reqAt.get(ev.u));
  });
  const nackedUnacked = [...nacked.get('crash-shared')].filter((u) => rcpt.has(u) && !ackreq.get('crash-shared').has(u));
  const covered = [];
  const uncovered = [];
  for (const u of nackedUnacked) {
    const r = shared.delivered.find((x) => x.unit.u === u);
    if (!r) continue;
    (nackAt.get(u) < lastConfirmedReq.at ? covered : uncovered).push({ u, rc: r.redeliveryCount });
  }
  const lost = covered.filter((x) => x.rc < 1);
  const lag = uncovered.filter((x) => x.rc < 1);
  if (covered.length + uncovered.length === 0) console.log('verify: redelivery counts: no nacked unit to check');
  else if (lost.length === 0) {
    console.log(`verify: redelivery counts: ${covered.length} units nacked before a later confirmed ack came back with redelivery_count >= 1 (persisted)` +
      (uncovered.length ? `; ${uncovered.length} nacked after the last confirmed ack: ${uncovered.length - lag.length} kept, ${lag.length} back at 0 (allowed: written with the next CAS)` : ''));
  } else {
    console.log(`verify: redelivery counts: ${lost.length}/${covered.length} units nacked before a later confirmed ack came back with redelivery_count 0 (units ${lost.map((x) => x.u).slice(0, 10)}): not persisted across the restart`);
  }
  const kill = events.find((ev) => ev.t === 'kill');
  if (kill) console.log(`verify: the broker was SIGKILLed with ${kill.sendsInFlight} sends and ${kill.acksInFlight} acks in flight`);
  if (lost.length) failures.push('redelivery counts were not kept across the restart');

  if (failures.length) {
    for (const f of failures) console.log(`FAIL: ${f}`);
    process.exit(1);
  }
  console.log('verify: OK');
  process.exit(0);
}

({ produce, survive, verify })[mode]().catch((e) => {
  console.log(`FAIL: ${mode}: ${e && e.stack ? e.stack : e}`);
  process.exit(2);
});
