// The record set the interop scenarios exchange, generated the same way in
// tests/kafka/clients/interop.py, and streamd's partitioner for kafkajs (docs/KAFKA.md §Partitioners).

// Keys on two of every three records, every byte value in the values, a header on every other one.
function interopRecords() {
  const out = [];
  for (let i = 0; i < 20; i++) {
    const value = Buffer.alloc(i * 13);
    for (let j = 0; j < value.length; j++) value[j] = (i * 7 + j) % 256;
    const record = { key: i % 3 === 0 ? null : `k${i}`, value };
    if (i % 2 === 0) record.headers = { h: Buffer.from([i]) };
    out.push(record);
  }
  out.push({ key: 'k-tomb', value: null });  // a tombstone
  return out;
}

// 32-bit FNV-1a over the key, modulo the partition count: where streamctl and client/ put a key.
function fnv1a(bytes) {
  let h = 0x811c9dc5;
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const streamdPartitioner = () => ({ partitionMetadata, message }) => {
  const n = partitionMetadata.length;
  if (message.key === null || message.key === undefined) return Math.floor(Math.random() * n);
  return fnv1a(Buffer.from(message.key)) % n;
};

module.exports = { interopRecords, fnv1a, streamdPartitioner };
