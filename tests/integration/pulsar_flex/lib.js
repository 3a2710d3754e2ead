// Shared helpers of the pulsar-flex end-to-end tests (smoke.js, multi.js, crash.js). Only the
// stock pulsar-flex 1.1.1 API is used for producing and consuming; two test-side shims, each
// named where it is used, fill in what pulsar-flex accepts but never puts on the wire:
//   * withKeys(): pulsar-flex has no message key; the Key_Shared test sets MessageMetadata
//     partition_key from the property `__key` on the producer side only (consumers are stock).
//   * withInitialPosition(): pulsar-flex accepts `initialPosition` but its SUBSCRIBE never
//     carries it (always Latest); the crash test's "read everything from Earliest" check sends it.
// Facts about pulsar-flex 1.1.1 the tests rely on (read in node_modules/pulsar-flex/src):
//   * sendMessage / sendBatch resolve when SEND_RECEIPT for (producerId, sequenceId) arrives
//     (SendResponseMediator); SEND_ERROR throws; no answer in 10 s parks the send in a queue that
//     is resent after the producer reconnects (the promise then resolves on the resend's receipt).
//   * ack() with a non-negative type sends CommandAck with a request_id and resolves only on the
//     ACK_RESPONSE with that request_id and no error (RequestIdResponseMediator); an error or a
//     10 s timeout parks the ack and resends it after the next SUCCESS on that client. So a
//     resolved ack promise is an ack the broker confirmed.
//   * ack({type: NEGATIVE}) sends REDELIVER_UNACKNOWLEDGED_MESSAGES (no answer in the protocol).
//   * Message ids are entry ids: CommandMessage.message_id has no batch index, so acking any
//     message of a batch acks the whole batch entry. The tests treat a send unit (one single
//     message or one batch = one entry) as the unit of ack.
//   * The receive queue silently drops a message frame when it is exactly full, so the tests
//     use a receiveQueueSize far above the number of messages in flight.
//   * Consumer reconnect: on socket close it re-looks-up (10 s pause between failed lookup
//     rounds, not configurable), re-subscribes and calls run() again. Producer: likewise, and
//     sends made while disconnected wait in the pending queue and are sent after reconnect.
'use strict';
const fs = require('fs');
const flex = require('pulsar-flex');
const commands = require('pulsar-flex/src/commands');

const { Producer, Consumer, logLevel } = flex;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond, ms, step = 50) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (cond()) return true;
    await sleep(step);
  }
  return cond();
}

// Fails the process (exit 1) with a message; every check goes through here.
function fail(msg) {
  console.log(`FAIL: ${msg}`);
  process.exit(1);
}

function check(cond, msg) {
  if (!cond) fail(msg);
}

// A process-wide deadline (the runners add `timeout` on top).
function deadline(ms, what) {
  const t = setTimeout(() => {
    console.log(`FAIL: TIMEOUT after ${ms} ms in ${what}`);
    process.exit(3);
  }, ms);
  t.unref();
  return t;
}

// pulsar-flex rejects some internal promises nobody awaits (e.g. a resend after a failed
// reconnect); log them instead of letting Node 20 abort the process.
function quietUnhandled() {
  process.on('unhandledRejection', (e) => {
    if (process.env.FLEX_DEBUG) console.log('unhandled rejection (pulsar-flex internal):', e);
  });
}

// Payload of message i of send unit u (n messages in the unit), tagged so a run can be told
// apart: `<tag>:<u>:<i>/<n>`.
const payloadOf = (tag, u, i, n) => `${tag}:${u}:${i}/${n}`;
function parsePayload(s) {
  const m = /^(.*):(\d+):(\d+)\/(\d+)$/.exec(s);
  return m ? { tag: m[1], u: Number(m[2]), i: Number(m[3]), n: Number(m[4]) } : null;
}

// Sends unit u: a single message when n === 1, else a batch of n messages.
async function sendUnit(producer, tag, u, n, extraProps = {}) {
  if (n === 1) {
    await producer.sendMessage({
      payload: payloadOf(tag, u, 0, 1),
      properties: { u: String(u), ...extraProps },
    });
  } else {
    const messages = [];
    for (let i = 0; i < n; i++) {
      messages.push({ payload: payloadOf(tag, u, i, n), properties: { u: String(u), i: String(i) } });
    }
    await producer.sendBatch({ messages });
  }
}

// Append-only JSON-lines journal, written synchronously so a SIGKILL of this process loses no
// recorded line.
class Journal {
  constructor(path) {
    this.fd = fs.openSync(path, 'a');
  }
  write(obj) {
    fs.writeSync(this.fd, JSON.stringify(obj) + '\n');
  }
  static read(path) {
    if (!fs.existsSync(path)) return [];
    const out = [];
    for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
      if (!line) continue;
      try {
        out.push(JSON.parse(line));
      } catch (e) {
        // a torn last line of a killed writer: ignored
      }
    }
    return out;
  }
}

const base = (port, topic) => ({
  topic: topic.startsWith('persistent://') ? topic : `persistent://public/default/${topic}`,
  discoveryServers: [`127.0.0.1:${port}`],
  logLevel: process.env.FLEX_DEBUG ? logLevel.INFO : logLevel.NOTHING,
});

// Test-side shim (see the header): MessageMetadata.partition_key from the `__key` property.
let keysInstalled = false;
function withKeys() {
  if (keysInstalled) return;
  keysInstalled = true;
  const orig = commands.messageMetadata;
  commands.messageMetadata = (args) => {
    const props = { ...(args.properties || {}) };
    const key = props.__key;
    delete props.__key;
    const md = orig({ ...args, properties: props });
    if (key !== undefined) md.setPartitionKey(String(key));
    return md;
  };
}

// Test-side shim (see the header): SUBSCRIBE carries initial_position when the consumer was
// constructed with `initialPosition` (pulsar-flex drops it).
let positionInstalled = false;
function withInitialPosition() {
  if (positionInstalled) return;
  positionInstalled = true;
  const orig = commands.subscribe;
  commands.subscribe = (args) => {
    const cmd = orig(args);
    if (args.initialPosition !== undefined) cmd.getSubscribe().setInitialposition(args.initialPosition);
    return cmd;
  };
}

// A consumer that records every delivered message: {payload, unit, entry, redeliveryCount,
// properties, key, at, ack}. `onMessage(rec, ack)` decides what to do (default: nothing, no ack).
async function collectingConsumer(port, topic, { subscription, subType, name, onMessage, initialPosition, receiveQueueSize = 5000 }) {
  const opts = { ...base(port, topic), subscription, subType, consumerName: name, receiveQueueSize };
  if (initialPosition !== undefined) opts.initialPosition = initialPosition;
  const c = new Consumer(opts);
  c.delivered = [];
  await c.subscribe();
  await c.run({
    autoAck: false,
    onMessage: async ({ message, command, metadata, redeliveryCount, properties, ack }) => {
      const payload = message.toString();
      const rec = {
        payload,
        unit: parsePayload(payload),
        entry: `${command.messageId.ledgerid}:${command.messageId.entryid}`,
        redeliveryCount: redeliveryCount || 0,
        properties,
        key: metadata && metadata.partitionKey,
        at: Date.now(),
        ack, // pulsar-flex's ack for this message; may be called later, outside the handler
      };
      c.delivered.push(rec);
      if (onMessage) await onMessage(rec, ack);
    },
  });
  return c;
}

module.exports = {
  Producer,
  Consumer,
  sleep,
  waitFor,
  fail,
  check,
  deadline,
  quietUnhandled,
  payloadOf,
  parsePayload,
  sendUnit,
  Journal,
  base,
  withKeys,
  withInitialPosition,
  collectingConsumer,
};
