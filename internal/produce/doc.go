// Package produce is how watermark-connect writes records to Kafka: the
// producer settings of the kafka_watermark output as franz-go (kgo) options
// (Config.Opts), and a Producer that writes a set of records through a
// client and reports, for each record, whether the broker acknowledged it
// (Producer.ProduceAll). The output and the input's dead-letter writer both
// produce through it; the connection options (brokers, TLS, SASL, the
// dialer) are kafkaconn's, added by the caller.
//
// # The guarantee
//
// A record is reported written (a nil error) only when the partition leader
// answered that every in-sync replica has it: Opts always asks for acks from
// all in-sync replicas, whatever else the Config says. Every other outcome is
// an error for that record alone, never a silent drop:
//
//   - a record too large to be produced is refused before it is sent, with a
//     *TooLargeError naming its size and the limit (size.go); one that the
//     broker (or kgo, against broker_write_max_bytes) refuses as too large
//     comes back as a *TooLargeError too, wrapping the refusal;
//   - a record that kgo fails (a topic that does not exist, retries or the
//     delivery timeout spent, the client closed) carries kgo's error;
//   - a record whose answer has not come when the caller's context ends is
//     reported with the context's error: it may still be written, which at
//     least once allows (it is retried, and may then be written twice).
//
// # Concurrency
//
// Config is a value. A Producer is safe for concurrent use: ProduceAll may
// be called from many goroutines at once (the output calls it from each of
// its max_in_flight writes). It does not own its client: whoever made the
// client closes it, after the last ProduceAll returned.
package produce
