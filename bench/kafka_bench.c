/* kafka_bench: the K1 and K3 workloads of bench/run-all with librdkafka, the client most Kafka
 * applications sit on, against streamd's Kafka listener. Prints one JSON line in the shape of
 * `streamctl bench`: records, records_per_s, mb_per_s, p50_ms, p99_ms, p99_9_ms, and client_cpu_s, the
 * CPU time librdkafka and this program took (user and system), which a broker on the same machine
 * does not get.
 *
 *   kafka_bench produce BROKER TOPIC RECORDS RECORD_SIZE BATCH [idempotent|in-flight=N]
 *       acks=all, one partition (0); `idempotent` sets enable.idempotence, `in-flight=N` sets
 *       max.in.flight without it (librdkafka 2.0's idempotent producer has one Produce request per
 *       partition in flight, whatever max.in.flight says: in-flight=1 is the same window unstamped)
 *   kafka_bench consume BROKER TOPIC RECORDS                     partition 0 from its start
 *
 * produce: latency is from rd_kafka_produce to the delivery report. consume: latency is per batch
 * taken from the consumer queue; throughput counts from the arrival of the first batch to the last,
 * so the client's start-up (metadata, the first fetch's connection) is left out, as it is for a
 * consumer that is catching up. */
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *detail) {
  fprintf(stderr, "kafka_bench: %s: %s\n", what, detail);
  exit(1);
}

static void set(rd_kafka_conf_t *conf, const char *name, const char *value) {
  char err[512];
  if (rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK) die(name, err);
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static void print_result(long records, double seconds, long payload_bytes, double *lat_ms, long n_lat) {
  qsort(lat_ms, (size_t)n_lat, sizeof *lat_ms, cmp_double);
  const double p50 = n_lat ? lat_ms[n_lat / 2] : 0;
  const double p99 = n_lat ? lat_ms[(long)((double)n_lat * 0.99)] : 0;
  const double p999 = n_lat ? lat_ms[(long)((double)n_lat * 0.999)] : 0;
  printf("{\"librdkafka\":\"%s\",\"records\":%ld,\"seconds\":%.3f,\"records_per_s\":%.0f,\"mb_per_s\":%.1f,\"p50_ms\":%.2f,"
         "\"p99_ms\":%.2f,\"p99_9_ms\":%.2f,\"client_cpu_s\":%.2f}\n",
         rd_kafka_version_str(), records, seconds, (double)records / seconds, (double)payload_bytes / seconds / 1e6, p50, p99, p999,
         cpu_seconds());
}

/* Per message: the time it was handed to librdkafka, then its latency. */
static double *sent_at;
static double *latency_ms;
static long delivered, failed;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  (void)opaque;
  const long i = (long)(intptr_t)m->_private;
  if (m->err) {
    if (failed++ == 0) fprintf(stderr, "kafka_bench: delivery failed: %s\n", rd_kafka_err2str(m->err));
    return;
  }
  latency_ms[delivered++] = (now_s() - sent_at[i]) * 1000.0;
}

static int produce(const char *broker, const char *topic, long records, long size, long batch, const char *mode) {
  char err[512], number[32];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", broker);
  set(conf, "acks", "all");
  snprintf(number, sizeof number, "%ld", batch);
  set(conf, "batch.num.messages", number);
  set(conf, "linger.ms", "5");
  set(conf, "enable.idempotence", strcmp(mode, "idempotent") == 0 ? "true" : "false");
  if (strncmp(mode, "in-flight=", 10) == 0) set(conf, "max.in.flight", mode + 10);
  set(conf, "queue.buffering.max.messages", "1000000");
  set(conf, "queue.buffering.max.kbytes", "1048576");
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == NULL) die("rd_kafka_new", err);
  rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
  sent_at = malloc(sizeof(double) * (size_t)records);
  latency_ms = malloc(sizeof(double) * (size_t)records);
  char *payload = malloc((size_t)size);
  memset(payload, 'x', (size_t)size);
  const double start = now_s();
  for (long i = 0; i < records; ++i) {
    sent_at[i] = now_s();
    while (rd_kafka_produce(t, 0, RD_KAFKA_MSG_F_COPY, payload, (size_t)size, NULL, 0, (void *)(intptr_t)i) != 0) {
      if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce", rd_kafka_err2str(rd_kafka_last_error()));
      rd_kafka_poll(rk, 1);
    }
    if ((i & 1023) == 0) rd_kafka_poll(rk, 0);
  }
  while (delivered + failed < records) rd_kafka_poll(rk, 10);
  const double seconds = now_s() - start;
  if (failed) die("produce", "some deliveries failed");
  print_result(records, seconds, records * size, latency_ms, delivered);
  rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk);
  return 0;
}

static int consume(const char *broker, const char *topic, long records) {
  char err[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", broker);
  set(conf, "group.id", "kafka-bench");
  set(conf, "enable.auto.commit", "false");
  set(conf, "fetch.message.max.bytes", "16777216");
  // Read ahead far, and when the local queue is full look again soon: librdkafka 2.0 backs a fetcher
  // off by fetch.error.backoff.ms (500 ms) whenever the queue is over its thresholds.
  set(conf, "queued.min.messages", "1000000");
  set(conf, "queued.max.messages.kbytes", "262144");
  set(conf, "fetch.error.backoff.ms", "5");
  if (getenv("KAFKA_BENCH_DEBUG") != NULL) set(conf, "debug", getenv("KAFKA_BENCH_DEBUG"));
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == NULL) die("rd_kafka_new", err);
  rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  if (rd_kafka_assign(rk, parts) != 0) die("assign", topic);
  rd_kafka_topic_partition_list_destroy(parts);
  rd_kafka_queue_t *queue = rd_kafka_queue_get_consumer(rk);
  enum { kBatch = 10000 };
  rd_kafka_message_t *batch[kBatch];
  long got = 0, bytes = 0, n_lat = 0, cap = 1024;
  double *lat = malloc(sizeof(double) * (size_t)cap);
  double start = 0, last = 0;
  int started = 0;
  const double give_up = now_s() + 300;
  while (got < records && now_s() < give_up) {
    const double t0 = now_s();
    const ssize_t n = rd_kafka_consume_batch_queue(queue, 1000, batch, kBatch);
    if (n < 0) die("consume", rd_kafka_err2str(rd_kafka_last_error()));
    const int first_batch = !started && n > 0;
    for (ssize_t i = 0; i < n; ++i) {
      if (batch[i]->err == 0) {
        ++got;
        bytes += (long)batch[i]->len;
      } else if (batch[i]->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        die("consume", rd_kafka_message_errstr(batch[i]));
      }
      rd_kafka_message_destroy(batch[i]);
    }
    if (first_batch) {
      // The clock starts once the first batch is in hand; its records are not counted.
      start = now_s();
      started = 1;
      records -= got;
      got = 0;
      bytes = 0;
      continue;
    }
    if (n > 0) {
      last = now_s();
      if (n_lat == cap) lat = realloc(lat, sizeof(double) * (size_t)(cap *= 2));
      lat[n_lat++] = (last - t0) * 1000.0;
    }
  }
  if (got < records) fprintf(stderr, "kafka_bench: consumed %ld of %ld records before giving up\n", got, records);
  print_result(got, last - start, bytes, lat, n_lat);
  rd_kafka_queue_destroy(queue);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return got < records;
}

int main(int argc, char **argv) {
  const int mode_known = argc == 7 || (argc == 8 && (strcmp(argv[7], "idempotent") == 0 ||
                                                      strncmp(argv[7], "in-flight=", 10) == 0));
  if (mode_known && strcmp(argv[1], "produce") == 0) {
    return produce(argv[2], argv[3], atol(argv[4]), atol(argv[5]), atol(argv[6]), argc == 8 ? argv[7] : "");
  }
  if (argc == 5 && strcmp(argv[1], "consume") == 0) return consume(argv[2], argv[3], atol(argv[4]));
  fprintf(stderr,
          "usage: kafka_bench produce BROKER TOPIC RECORDS RECORD_SIZE BATCH [idempotent|in-flight=N]\n"
          "       kafka_bench consume BROKER TOPIC RECORDS\n");
  return 2;
}
