// Package plugin is the kafka_watermark Benthos input: it consumes Kafka
// topics in a consumer group with franz-go and commits, per partition, only
// the watermark of the delivered batches, so an offset is never committed
// past a batch that is unacknowledged or failed.
//
// This package is the input's Benthos face: its config spec and lint rules
// (spec.go, compat.go for the redpanda input's fields), the parsed config
// (config.go), the kgo client options (client.go, dialer.go), its logging
// (connlog.go: kgo's lines, failed dials summed up per address, brokers
// that accept connections and never answer, across reconnects), and the
// Input, whose Connect, ReadBatch, ack functions and Close are the
// engine's API (internal/engine) put to Benthos's use. Register adds the
// input to an environment; RecordsToBatch is the message conversion.
package plugin
