package io.watermarkconnect.bench.pc;

import com.sun.net.httpserver.HttpServer;
import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode;
import io.confluent.parallelconsumer.ParallelStreamProcessor;
import io.confluent.parallelconsumer.PollContext;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import sun.misc.Signal;

/**
 * The Confluent Parallel Consumer contender of the key-ordering benchmark: reads a topic from the
 * start with a fresh group, KEY ordering, and POSTs each batch PC hands out to an HTTP sink as one
 * request, until N records are delivered; then closes PC (its final commit) and reads the group's
 * committed offsets back from the broker. See README.md for the flags and what it prints.
 *
 * <p>Threads: PC's pool of maxConcurrency workers runs {@link #deliver}, one blocking request each,
 * so at most maxConcurrency requests are in flight. The counters below are written by the workers
 * and read by the main thread and the /metrics handler; all are atomics.
 */
public final class Bench {
  private final Args args;
  private final HttpClient http;
  private final URI sink;

  /** Records the sink answered 2xx for; only grows. */
  private final AtomicLong delivered = new AtomicLong();
  /** Requests sent, and those answered other than 2xx (PC retries their records). */
  private final AtomicLong requests = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  /** System.nanoTime and process CPU ns when the first batch was handed to a worker; set once. */
  private final AtomicLong startNanos = new AtomicLong(-1);
  private final AtomicLong startCpu = new AtomicLong(-1);
  /** The same, when the delivered count first reached args.records; set once. */
  private final AtomicLong doneNanos = new AtomicLong(-1);
  private final AtomicLong doneCpu = new AtomicLong(-1);
  /** Counted down at the N-th record or at SIGTERM/SIGINT; terminated says which came first. */
  private final CountDownLatch done = new CountDownLatch(1);
  private final AtomicBoolean terminated = new AtomicBoolean();

  private Bench(Args args) {
    this.args = args;
    this.sink = URI.create(args.sink);
    // HTTP/1.1 as Benthos's http_client speaks to the sink: one connection per request in flight.
    this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
  }

  public static void main(String[] argv) throws Exception {
    // PC logs every rebalance and commit at INFO; keep the benchmark's stderr to what goes wrong.
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", System.getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
    Args a;
    try {
      a = Args.parse(argv);
    } catch (IllegalArgumentException e) {
      System.err.println("pc-bench: " + e.getMessage());
      System.err.println(Args.USAGE);
      System.exit(2);
      return;
    }
    System.exit(new Bench(a).run());
  }

  private int run() throws Exception {
    long jvmStart = ManagementFactory.getRuntimeMXBean().getStartTime();
    HttpServer metrics = args.httpAddr == null ? null : serveMetrics(args.httpAddr);

    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.brokers);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, args.group);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    // PC commits itself and refuses a consumer that autocommits.
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);

    ParallelConsumerOptions<String, String> opts = ParallelConsumerOptions.<String, String>builder()
        .consumer(consumer)
        .ordering(args.ordering)
        .maxConcurrency(args.maxConcurrency)
        .batchSize(args.batchSize)
        // PC's default, and the one its docs call the fastest: the controller thread commits
        // with commitAsync every commitInterval; close() makes a last, synchronous commit.
        .commitMode(CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS)
        .commitInterval(Duration.ofMillis(args.commitIntervalMs))
        .build();
    ParallelStreamProcessor<String, String> pc = ParallelStreamProcessor.createEosStreamProcessor(opts);
    AtomicBoolean closed = new AtomicBoolean();
    Runnable close = () -> {
      if (closed.compareAndSet(false, true)) {
        pc.close();
      }
    };
    // SIGTERM or SIGINT (bench/e2e stops its contenders with SIGTERM once they have sent what it
    // wants) ends the wait below like the N-th record does: PC is closed (it commits), the line is
    // printed for what was delivered so far, and the exit status is 0, as Benthos's and rawloop's.
    for (String sig : new String[] {"TERM", "INT"}) {
      Signal.handle(new Signal(sig), s -> {
        terminated.set(true);
        done.countDown();
      });
    }
    // Any other way out (an uncaught error in main): still close PC, so that it commits.
    Thread hook = new Thread(close, "pc-bench-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);

    pc.subscribe(List.of(args.topic));
    pc.poll(this::deliver);

    if (!done.await(args.timeoutSeconds, TimeUnit.SECONDS)) {
      System.err.printf("pc-bench: %d of %d records delivered after %d s%n", delivered.get(), args.records, args.timeoutSeconds);
      return 1;
    }
    boolean stopped = terminated.get() && doneNanos.compareAndSet(-1, System.nanoTime());
    if (stopped) {
      doneCpu.set(processCpuNanos());
      System.err.printf("pc-bench: terminated with %d of %d records delivered%n", delivered.get(), args.records);
    }
    long closeStart = System.nanoTime();
    close.run();
    long closeNanos = System.nanoTime() - closeStart;
    Runtime.getRuntime().removeShutdownHook(hook);
    if (metrics != null) {
      metrics.stop(0);
    }

    long[] committed = committedAndEnd();
    // A stop before the first batch leaves no window: its figures print as 0.
    double window = startNanos.get() < 0 ? 0 : (doneNanos.get() - startNanos.get()) / 1e9;
    long windowRecords = stopped ? delivered.get() : args.records;
    double cpuWindow = startCpu.get() < 0 ? 0 : (doneCpu.get() - startCpu.get()) / 1e9;
    double cpuTotal = processCpuNanos() / 1e9;
    // One line of key=value pairs, for a driver to parse; units in the names.
    System.out.printf(
        "pc-bench ordering=%s delivered=%d records_per_s=%.0f window_s=%.3f cpu_window_s=%.2f cpu_s_per_million=%.2f "
            + "cpu_total_s=%.2f wall_total_s=%.2f close_s=%.3f requests=%d failed_requests=%d "
            + "records_per_request=%.1f committed=%d log_end=%d%n",
        args.ordering, delivered.get(), window > 0 ? windowRecords / window : 0, window, cpuWindow,
        windowRecords > 0 ? cpuWindow / (windowRecords / 1e6) : 0,
        cpuTotal, (System.currentTimeMillis() - jvmStart) / 1e3, closeNanos / 1e9, requests.get(), failed.get(),
        (double) delivered.get() / Math.max(1, requests.get() - failed.get()), committed[0], committed[1]);
    // Everything read was delivered, so a commit short of the log end would replay on restart.
    if (!stopped && args.records >= committed[1] && committed[0] < committed[1]) {
      System.err.printf("pc-bench: committed %d of the log's %d records after close%n", committed[0], committed[1]);
      return 1;
    }
    return 0;
  }

  /**
   * PC's user function: one batch of up to batchSize records (distinct keys under KEY ordering, of
   * any partitions), posted as one request. A non-2xx answer throws, and PC retries the batch's
   * records after its retry delay.
   */
  private void deliver(PollContext<String, String> ctx) {
    startNanos.compareAndSet(-1, System.nanoTime());
    startCpu.compareAndSet(-1, processCpuNanos());
    List<ConsumerRecord<String, String>> recs = ctx.getConsumerRecordsFlattened();
    HttpRequest req = HttpRequest.newBuilder(sink)
        .header("Content-Type", "application/json")
        .header("X-Instance", args.instance)
        .POST(HttpRequest.BodyPublishers.ofString(render(recs)))
        .build();
    requests.incrementAndGet();
    int status;
    try {
      status = http.send(req, HttpResponse.BodyHandlers.discarding()).statusCode();
    } catch (IOException e) {
      failed.incrementAndGet();
      throw new RuntimeException("post to sink: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RuntimeException("interrupted posting to sink", e);
    }
    if (status / 100 != 2) {
      failed.incrementAndGet();
      throw new RuntimeException("sink answered " + status);
    }
    long n = delivered.addAndGet(recs.size());
    if (n >= args.records && doneNanos.compareAndSet(-1, System.nanoTime())) {
      doneCpu.set(processCpuNanos());
      done.countDown();
    }
  }

  /**
   * A batch as the sink's testkit.Record array: {"t":topic,"p":partition,"o":offset,"v":value} per
   * record, the shape the Benthos pipelines of the benchmark render.
   */
  static String render(List<ConsumerRecord<String, String>> recs) {
    StringBuilder b = new StringBuilder(recs.size() * 160).append('[');
    for (int i = 0; i < recs.size(); i++) {
      ConsumerRecord<String, String> r = recs.get(i);
      if (i > 0) {
        b.append(',');
      }
      b.append("{\"t\":");
      quote(b, r.topic());
      b.append(",\"p\":").append(r.partition()).append(",\"o\":").append(r.offset()).append(",\"v\":");
      quote(b, r.value() == null ? "" : r.value());
      b.append('}');
    }
    return b.append(']').toString();
  }

  /** Appends s as a JSON string. */
  static void quote(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    b.append('"');
  }

  /** The group's committed offsets and the topic's log ends, each summed over the partitions. */
  private long[] committedAndEnd() throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args.brokers);
    try (Admin admin = Admin.create(p)) {
      Map<TopicPartition, OffsetAndMetadata> committed =
          admin.listConsumerGroupOffsets(args.group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
      TopicDescription d = admin.describeTopics(List.of(args.topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(args.topic);
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      d.partitions().forEach(tp -> latest.put(new TopicPartition(args.topic, tp.partition()), OffsetSpec.latest()));
      long end = 0;
      for (var e : admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).values()) {
        end += e.offset();
      }
      long sum = 0;
      for (var e : committed.entrySet()) {
        if (e.getKey().topic().equals(args.topic) && e.getValue() != null) {
          sum += e.getValue().offset();
        }
      }
      return new long[] {sum, end};
    }
  }

  /** Serves output_sent (the delivered count) at /metrics, as bench/rawloop does for bench/e2e. */
  private HttpServer serveMetrics(String addr) throws IOException {
    int colon = addr.lastIndexOf(':');
    HttpServer s = HttpServer.create(new InetSocketAddress(addr.substring(0, colon), Integer.parseInt(addr.substring(colon + 1))), 16);
    s.createContext("/metrics", ex -> {
      byte[] body = ("# TYPE output_sent counter\noutput_sent " + delivered.get() + "\n").getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4");
      ex.sendResponseHeaders(200, body.length);
      ex.getResponseBody().write(body);
      ex.close();
    });
    s.start();
    return s;
  }

  /** CPU time of the whole process so far (all threads: PC's, the Kafka client's, GC and JIT). */
  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }
}
