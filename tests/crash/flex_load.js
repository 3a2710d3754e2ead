// The pulsar-flex part of the broker crash campaign (tests/crash/broker_campaign.cc starts it
// for each load phase and SIGKILLs it by PID right after the broker):
//
//   node flex_load.js <port> <round>
//
// Produces send units (a single message, or a batch of 2..6) tagged `f<round>:<u>:<i>/<n>` to
// `crash-flex` with four sends in flight, and consumes the durable Shared subscription
// `flex-sub` (created by the campaign before any message), acking about 2/3 of the entries with
// ack responses and nacking about 1/10. Every event is one line on stdout, written
// synchronously, so what the campaign reads after the kill was confirmed before it:
//   R <u> <n>    sendMessage / sendBatch resolved: the SEND_RECEIPT arrived
//   Q <entry>    ack requested (outcome unknown until A)
//   A <entry>    ack confirmed (the ACK_RESPONSE arrived without error)
//   N <entry>    nack (REDELIVER_UNACKNOWLEDGED_MESSAGES)
// pulsar-flex acks whole entries (lib.js explains why), so the unit of ack is the entry.
'use strict';
const fs = require('fs');
const path = require('path');
const L = require(path.join(__dirname, '..', 'integration', 'pulsar_flex', 'lib'));

const [port, round] = process.argv.slice(2);
if (!port || round === undefined) {
  console.log('usage: node flex_load.js <port> <round>');
  process.exit(2);
}
L.quietUnhandled();
L.deadline(120000, 'flex_load');
const TOPIC = 'crash-flex';
const tag = `f${round}`;
const out = (line) => fs.writeSync(1, line + '\n');
const unitSize = (u) => (u % 4 === 3 ? 2 + (u % 5) : 1);

async function main() {
  const acted = new Set();
  await L.collectingConsumer(port, TOPIC, {
    subscription: 'flex-sub',
    subType: L.Consumer.SUB_TYPES.SHARED,
    name: `flex-${round}`,
    onMessage: (rec, ack) => {
      const entry = rec.entry.split(':')[1];
      if (acted.has(entry)) return; // one decision per entry (a batch is delivered per message)
      acted.add(entry);
      const dice = Math.random();
      if (dice < 0.1) {
        out(`N ${entry}`);
        acted.delete(entry); // its redelivery gets a new decision
        ack({ type: L.Consumer.ACK_TYPES.NEGATIVE }).catch(() => {});
        return;
      }
      if (dice > 0.7) return; // left unacked
      out(`Q ${entry}`);
      ack().then(
        (cmd) => {
          if (cmd && (cmd.error === undefined || cmd.error === null)) out(`A ${entry}`);
        },
        () => {}
      );
    },
  });
  out('READY');
  const producer = new L.Producer({ ...L.base(port, TOPIC), producerAccessMode: L.Producer.ACCESS_MODES.SHARED });
  await producer.create();
  let next = 0;
  const loop = async () => {
    while (next < 100000) {
      const u = next++;
      const n = unitSize(u);
      await L.sendUnit(producer, tag, u, n);
      out(`R ${u} ${n}`);
    }
  };
  await Promise.all([loop(), loop(), loop(), loop()]);
}

main().catch((e) => {
  out(`E ${e && e.message}`);
  process.exit(1);
});
