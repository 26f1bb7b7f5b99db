// Package plugin is the kafka_watermark Benthos input and output. The input
// consumes Kafka topics in a consumer group with franz-go and commits, per
// partition, only the watermark of the delivered batches, so an offset is
// never committed past a batch that is unacknowledged or failed. The output
// writes messages to Kafka and acknowledges a batch only once every in-sync
// replica has every record of it, failing only the messages whose records
// failed.
//
// This package is their Benthos face. The input: its config spec and lint
// rules (spec.go, compat.go for the redpanda input's fields), the parsed
// config (config.go), the kgo client options (client.go, dialer.go), its
// logging (connlog.go: kgo's lines, failed dials summed up per address,
// brokers that accept connections and never answer, across reconnects), and
// the Input, whose Connect, ReadBatch, ack functions and Close are the
// engine's API (internal/engine) put to Benthos's use. The output: its spec
// (output_spec.go), its parsed config, read and validated in
// output_config.go, messages to records and batch errors
// (output_records.go), and the Output (output.go), which writes through
// internal/produce behind one seam, recordWriter, where exactly once will
// plug in. Both share the connection's fields (connspec.go, dialer.go,
// internal/kafkaconn) and the lint machinery (lint.go, check.go). Register
// adds them to an environment; RecordsToBatch is the input's message
// conversion.
//
// The kafka_share input (share.go) consumes a share group (KIP-932). Its
// files: share_spec.go, share_config.go, share_group.go (the group's
// setup), share_verdict.go (verdicts and dead letters), share_metrics.go; the bookkeeping that keeps kgo from
// accepting a record still in the pipeline is internal/share's.
package plugin
