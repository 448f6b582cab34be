"""The interop record set (the same as tests/kafka/node/interop.js) and streamd's partitioner for
kafka-python (docs/KAFKA.md §Partitioners)."""


def interop_records():
    out = []
    for i in range(20):
        value = bytes((i * 7 + j) % 256 for j in range(i * 13))
        key = None if i % 3 == 0 else ("k%d" % i).encode()
        headers = [("h", bytes([i]))] if i % 2 == 0 else []
        out.append((key, value, headers))
    out.append((b"k-tomb", None, []))
    return out


def fnv1a(data):
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def streamd_partitioner(key, all_partitions, available):
    """kafka-python's partitioner signature: the key's bytes, every partition, the available ones."""
    if key is None:
        return (available or all_partitions)[0]
    return all_partitions[fnv1a(key) % len(all_partitions)]
