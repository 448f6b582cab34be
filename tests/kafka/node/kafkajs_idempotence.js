// kafkajs with `idempotent: true` against streamd while the test kills the broker with SIGKILL and
// restarts it, and stops it with SIGSTOP past the request timeout (docs/KAFKA.md §Idempotent producers).
//
// usage: node kafkajs_idempotence.js KAFKA_PORT COUNT
//   sends COUNT messages, each carrying its own id, keyed by id % 50, to topic `idem-js` (3 partitions),
//   in batches of 100, each send retried until it is acknowledged; then reads the topic back: every
//   acknowledged message exactly once, each key's messages in order, none twice.
const { Kafka, logLevel } = require('kafkajs');

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const [port, countText] = process.argv.slice(2);
const count = Number(countText);
const KEYS = 50;
const kafka = new Kafka({
  clientId: 'kafkajs-idempotence',
  brokers: [`127.0.0.1:${port}`],
  logLevel: logLevel.NOTHING,
  requestTimeout: 3000,
  retry: { retries: 100, initialRetryTime: 100, maxRetryTime: 1000 },
});

function check(cond, what) {
  if (!cond) {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
}

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'idem-js', numPartitions: 3 }] });
  await admin.disconnect();

  // kafkajs keeps an idempotent producer to one request in flight per broker.
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < count; i += 100) {
    const messages = [];
    for (let j = i; j < Math.min(i + 100, count); ++j) messages.push({ key: String(j % KEYS), value: String(j) });
    // A send that fails after kafkajs' own retries (the broker down longer than they last) is sent
    // again: the same producer, so its sequences make a resend of what was written a duplicate.
    for (let attempt = 0; ; ++attempt) {
      try {
        await producer.send({ topic: 'idem-js', acks: -1, messages });
        break;
      } catch (e) {
        check(attempt < 50, `send of ${i} failed 50 times: ${e.message}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await new Promise((r) => setTimeout(r, 50));  // spread the sends over the faults the test makes (about 10 s)
  }
  await producer.disconnect();

  // Everything the partitions hold, up to their ends as they are now.
  const reader = kafka.admin();
  await reader.connect();
  const ends = new Map((await reader.fetchTopicOffsets('idem-js')).map((p) => [p.partition, Number(p.high)]));
  await reader.disconnect();
  let stored = 0;
  for (const end of ends.values()) stored += end;
  const consumer = kafka.consumer({ groupId: 'idem-js-check' });
  await consumer.connect();
  await consumer.subscribe({ topic: 'idem-js', fromBeginning: true });
  const seen = new Map();
  let duplicates = 0;
  let read = 0;
  const lastOfKey = new Map();
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${read} of ${stored}`)), 120000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        const i = Number(message.value.toString());
        if (seen.has(i)) duplicates += 1;
        seen.set(i, partition);
        const key = i % KEYS;
        check((lastOfKey.get(key) ?? -1) < i, `key ${key}: message ${i} after ${lastOfKey.get(key)}`);
        lastOfKey.set(key, i);
        if (++read === stored) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  check(duplicates === 0, `${duplicates} messages stored twice`);
  check(seen.size === count, `${seen.size} of ${count} acknowledged messages stored`);
  console.log(`idempotence: ${count} messages delivered, ${stored} stored, 0 twice`);
}

main().catch((e) => {
  console.error(`FAILED: ${e.stack || e}`);
  process.exit(1);
});
