package io.watermarkconnect.bench.pc;

import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;

/** The command line, Go flag style (-name value or --name value), validated once in {@link #parse}. */
final class Args {
  static final String USAGE = """
      usage: java -jar pc-bench.jar -brokers H:P -topic T -group G -sink URL -records N
             [-ordering KEY] [-max-concurrency 64] [-batch-size 64] [-commit-interval-ms 1000]
             [-http 127.0.0.1:PORT] [-instance pc] [-timeout-s 600]""";

  String brokers;
  String topic;
  String group;
  String sink;
  long records;
  /** KEY for the benchmark; PARTITION or UNORDERED as controls (the key sink must flag UNORDERED). */
  ProcessingOrder ordering = ProcessingOrder.KEY;
  int maxConcurrency = 64;
  int batchSize = 64;
  /** kafka_watermark's commit_period default (1s), where PC's own is 5s. */
  long commitIntervalMs = 1000;
  /** Where to serve /metrics (output_sent); null: not served. */
  String httpAddr;
  /** The X-Instance header of every request. */
  String instance = "pc";
  long timeoutSeconds = 600;

  static Args parse(String[] argv) {
    Args a = new Args();
    for (int i = 0; i < argv.length; i++) {
      String name = argv[i].replaceFirst("^--?", "");
      if (i + 1 >= argv.length) {
        throw new IllegalArgumentException("flag " + argv[i] + " needs a value");
      }
      String v = argv[++i];
      switch (name) {
        case "brokers" -> a.brokers = v;
        case "topic" -> a.topic = v;
        case "group" -> a.group = v;
        case "sink" -> a.sink = v;
        case "records" -> a.records = Long.parseLong(v);
        case "ordering" -> {
          try {
            a.ordering = ProcessingOrder.valueOf(v);
          } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("-ordering (" + v + ") must be KEY, PARTITION or UNORDERED");
          }
        }
        case "max-concurrency" -> a.maxConcurrency = Integer.parseInt(v);
        case "batch-size" -> a.batchSize = Integer.parseInt(v);
        case "commit-interval-ms" -> a.commitIntervalMs = Long.parseLong(v);
        case "http" -> a.httpAddr = v;
        case "instance" -> a.instance = v;
        case "timeout-s" -> a.timeoutSeconds = Long.parseLong(v);
        default -> throw new IllegalArgumentException("unknown flag " + argv[i - 1]);
      }
    }
    for (String[] f : new String[][] {{"brokers", a.brokers}, {"topic", a.topic}, {"group", a.group}, {"sink", a.sink}}) {
      if (f[1] == null || f[1].isEmpty()) {
        throw new IllegalArgumentException("-" + f[0] + " is required");
      }
    }
    if (a.records < 1) {
      throw new IllegalArgumentException("-records (" + a.records + ") must be at least 1");
    }
    if (a.maxConcurrency < 1 || a.batchSize < 1) {
      throw new IllegalArgumentException("-max-concurrency (" + a.maxConcurrency + ") and -batch-size (" + a.batchSize + ") must be at least 1");
    }
    if (a.commitIntervalMs < 1 || a.timeoutSeconds < 1) {
      throw new IllegalArgumentException("-commit-interval-ms (" + a.commitIntervalMs + ") and -timeout-s (" + a.timeoutSeconds + ") must be at least 1");
    }
    if (a.httpAddr != null && a.httpAddr.lastIndexOf(':') < 1) {
      throw new IllegalArgumentException("-http (" + a.httpAddr + ") must be host:port");
    }
    return a;
  }
}
