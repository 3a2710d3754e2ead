const { Producer, Consumer, logLevel } = require('pulsar-flex');
const port = process.argv[2];
const subType = Consumer.SUB_TYPES[process.argv[3] || 'SHARED'];
const base = { topic: `persistent://public/default/flex-smoke-${process.argv[3] || 'SHARED'}`, discoveryServers: [`127.0.0.1:${port}`], logLevel: logLevel.ERROR };
(async () => {
  const timer = setTimeout(() => { console.log('TIMEOUT'); process.exit(3); }, 30000);
  const consumer = new Consumer({ ...base, subscription: `flex-sub-${process.argv[3] || 'SHARED'}`, subType, consumerName: 'c1', receiveQueueSize: 100 });
  await consumer.subscribe();
  const got = [];
  let nacked = false;
  let redelivered = null;
  await consumer.run({ autoAck: false, onMessage: async ({ message, redeliveryCount, ack }) => {
    const s = message.toString();
    if (s === 'two' && !nacked) { nacked = true; await ack({ type: Consumer.ACK_TYPES.NEGATIVE }); return; }
    if (s === 'two') redelivered = redeliveryCount;
    got.push(s); await ack();
  }});
  const producer = new Producer({ ...base, producerAccessMode: Producer.ACCESS_MODES.SHARED });
  await producer.create();
  await producer.sendMessage({ payload: 'one', properties: { k: 'v' } });
  await producer.sendBatch({ messages: [{ payload: 'two' }, { payload: 'three' }] });
  await producer.sendMessage({ payload: 'four' });
  const until = Date.now() + 20000;
  while (got.length < 4 && Date.now() < until) await new Promise(r => setTimeout(r, 100));
  console.log('GOT', JSON.stringify(got.sort()), 'redelivered', redelivered);
  await producer.close();
  await consumer.unsubscribe();
  clearTimeout(timer);
  process.exit(got.length >= 4 ? 0 : 1);
})().catch(e => { console.log('ERR', e); process.exit(2); });
