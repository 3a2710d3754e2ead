// Compacted topic with the stock pulsar-flex client (run by run.sh, ctest `pulsar_flex.smoke`):
//   node compaction.js <port> <http-port>
// Produces 20 keyed messages over 5 keys (k4's last one a tombstone: empty payload), triggers
// compaction with PUT .../compaction and waits for GET .../compaction to say SUCCESS, produces 3
// more. Checks: a consumer with readCompacted (Exclusive, from Earliest) gets the latest value
// of k0..k3 (not k4) with their original entry ids, then the 3 later messages, each once; a
// consumer without readCompacted gets all 23. Keys: the withKeys() shim of lib.js (pulsar-flex
// has no message key); readCompacted is stock pulsar-flex (CommandSubscribe.read_compacted).
'use strict';
const http = require('http');
const { Producer, Consumer, sleep, waitFor, check, deadline, quietUnhandled, base, withKeys, withInitialPosition } = require('./lib');

const port = process.argv[2];
const httpPort = process.argv[3];
const topicShort = `flex-compacted-${Date.now()}`;
const topic = `persistent://public/default/${topicShort}`;
const adminPath = `/admin/v2/persistent/public/default/${topicShort}/compaction`;

function request(method, path) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: httpPort, method, path, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

async function consume(subscription, readCompacted, want) {
  const c = new Consumer({ ...base(port, topic), subscription, subType: Consumer.SUB_TYPES.EXCLUSIVE,
    consumerName: subscription, readCompacted, initialPosition: 1, receiveQueueSize: 1000 });
  const got = [];
  await c.subscribe();
  await c.run({ autoAck: false, onMessage: async ({ message, command, metadata }) => {
    got.push({ entry: Number(command.messageId.entryid), key: metadata && metadata.partitionKey, value: message.toString() });
  } });
  await waitFor(() => got.length >= want, 10000);
  await sleep(500); // anything extra would show up now
  await c.unsubscribe();
  return got;
}

(async () => {
  quietUnhandled();
  deadline(30000, 'compaction.js');
  withKeys();
  withInitialPosition();
  const producer = new Producer({ ...base(port, topic), producerAccessMode: Producer.ACCESS_MODES.SHARED });
  await producer.create();
  const latest = {};
  for (let i = 0; i < 20; i++) {
    const key = `k${i % 5}`;
    const value = key === 'k4' && i === 19 ? '' : `v${i}`;
    await producer.sendMessage({ payload: value, properties: { __key: key } });
    latest[key] = { entry: i, value };
  }
  const put = await request('PUT', adminPath);
  check(put.status === 202, `PUT compaction answered ${put.status} ${put.body}`);
  let status = '';
  const until = Date.now() + 10000;
  while (Date.now() < until) {
    const st = await request('GET', adminPath);
    status = JSON.parse(st.body).status;
    if (status !== 'RUNNING') break;
    await sleep(50);
  }
  check(status === 'SUCCESS', `compaction status ${status}`);
  for (let i = 20; i < 23; i++) {
    await producer.sendMessage({ payload: `after${i}`, properties: { __key: `k${i % 5}` } });
  }
  await producer.close();

  const compacted = await consume('rc', true, 7);
  const want = Object.entries(latest).filter(([, v]) => v.value !== '').map(([k, v]) => ({ entry: v.entry, key: k, value: v.value }))
    .sort((a, b) => a.entry - b.entry);
  for (let i = 20; i < 23; i++) want.push({ entry: i, key: `k${i % 5}`, value: `after${i}` });
  console.log('readCompacted GOT', JSON.stringify(compacted));
  check(JSON.stringify(compacted) === JSON.stringify(want), `readCompacted got ${JSON.stringify(compacted)}, expected ${JSON.stringify(want)}`);

  const plain = await consume('plain', false, 23);
  check(plain.length === 23, `without readCompacted got ${plain.length} messages, expected 23`);
  check(plain.every((m, i) => m.entry === i), 'without readCompacted: not every entry in order');
  console.log('COMPACTION OK: compacted view', want.length - 3, 'keys + 3 after the horizon; plain', plain.length);
  process.exit(0);
})().catch((e) => { console.log('ERR', e); process.exit(2); });
