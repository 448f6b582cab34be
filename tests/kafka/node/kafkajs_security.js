// kafkajs against streamd's Kafka TLS listener with SASL (run by tests/kafka's client tests).
//
// usage: node kafkajs_security.js TLS_PORT CA_FILE
// The test's access file holds ingest (write on orders.*) and reader (read on orders.*), each with the
// token "t-" and its name as its SCRAM password: ingest sends over SCRAM-SHA-256, reader reads back in
// a group over SCRAM-SHA-512, a write beyond ingest's rights is TOPIC_AUTHORIZATION_FAILED and a
// wrong password fails the login.
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [port, caFile] = process.argv.slice(2);
const client = (mechanism, username, password) => new Kafka({
  clientId: 'kafkajs-security',
  brokers: [`localhost:${port}`],
  ssl: { ca: [fs.readFileSync(caFile, 'utf8')] },
  sasl: { mechanism, username, password },
  logLevel: logLevel.NOTHING,
  retry: { retries: 2 },
});

function check(cond, what) {
  if (!cond) {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
}

async function main() {
  const producer = client('scram-sha-256', 'ingest', 't-ingest').producer();
  await producer.connect();
  await producer.send({ topic: 'orders.js', messages: [{ key: 'a', value: 'one' }, { key: 'b', value: 'two' }] });
  let refused = null;
  try {
    await producer.send({ topic: 'payroll', messages: [{ value: 'x' }] });
  } catch (e) {
    refused = e;
  }
  check(refused && /TOPIC_AUTHORIZATION_FAILED|authorized/i.test(`${refused.type} ${refused.message}`),
    `payroll refused: ${refused && refused.type} ${refused && refused.message}`);
  await producer.disconnect();

  const consumer = client('scram-sha-512', 'reader', 't-reader').consumer({ groupId: 'js-secure' });
  await consumer.connect();
  await consumer.subscribe({ topic: 'orders.js', fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out with ${got.length} records`)), 20000);
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString());
        if (got.length === 2) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  check(JSON.stringify(got.sort()) === JSON.stringify(['one', 'two']), `records ${JSON.stringify(got)}`);
  await consumer.disconnect();

  let failed = null;
  const bad = client('scram-sha-256', 'reader', 'wrong').producer();
  try {
    await bad.connect();
  } catch (e) {
    failed = e;
  }
  check(failed && /SASL|authenticat/i.test(`${failed.type} ${failed.message}`),
    `a wrong password fails: ${failed && failed.message}`);
}

main().catch((e) => {
  console.error(`FAILED: ${e.stack || e}`);
  process.exit(1);
});
