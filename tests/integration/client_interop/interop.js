// The pulsar-flex side of the interoperability test (client_interop.sh):
//   node interop.js <port> consume <topic> <sub> <n> <tag>   n messages "<tag>-0".."<tag>-<n-1>"
//        in order, each with property src=nereus, each acked (ack resolves on ACK_RESPONSE)
//   node interop.js <port> produce <topic> <n> <tag>          n messages "<tag>-<i>" with
//        property src=flex, alternating single sends and batches of two
'use strict';
const { Producer, Consumer, logLevel } = require('pulsar-flex');
const [port, mode, topic] = process.argv.slice(2, 5);
const base = { topic, discoveryServers: [`127.0.0.1:${port}`], logLevel: logLevel.ERROR };
const fail = (m) => { console.log(`FAIL: ${m}`); process.exit(1); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  setTimeout(() => fail('TIMEOUT'), 40000).unref();
  if (mode === 'consume') {
    const [sub, n, tag] = [process.argv[5], Number(process.argv[6]), process.argv[7]];
    const consumer = new Consumer({ ...base, subscription: sub, subType: Consumer.SUB_TYPES.EXCLUSIVE, consumerName: 'flex', receiveQueueSize: 1000 });
    await consumer.subscribe();
    const got = [];
    await consumer.run({ autoAck: false, onMessage: async ({ message, properties, ack }) => {
      got.push({ s: message.toString(), p: properties });
      await ack();
    }});
    const until = Date.now() + 30000;
    while (got.length < n && Date.now() < until) await sleep(50);
    if (got.length !== n) fail(`got ${got.length} of ${n}`);
    got.forEach((g, i) => {
      if (g.s !== `${tag}-${i}`) fail(`message ${i} is '${g.s}'`);
      if (!g.p || g.p.src !== 'nereus') fail(`message ${i} lacks property src=nereus: ${JSON.stringify(g.p)}`);
    });
    await consumer.unsubscribe().catch(() => {});
    console.log('OK consume');
    process.exit(0);
  } else if (mode === 'produce') {
    const [n, tag] = [Number(process.argv[5]), process.argv[6]];
    const producer = new Producer({ ...base, producerAccessMode: Producer.ACCESS_MODES.SHARED });
    await producer.create();
    for (let i = 0; i < n;) {
      if (i % 3 === 1 && i + 1 < n) {
        await producer.sendBatch({ messages: [
          { payload: `${tag}-${i}`, properties: { src: 'flex' } },
          { payload: `${tag}-${i + 1}`, properties: { src: 'flex' } }] });
        i += 2;
      } else {
        await producer.sendMessage({ payload: `${tag}-${i}`, properties: { src: 'flex' } });
        i += 1;
      }
    }
    await producer.close();
    console.log('OK produce');
    process.exit(0);
  } else {
    fail('bad mode');
  }
})().catch((e) => fail(e && e.stack ? e.stack : String(e)));
