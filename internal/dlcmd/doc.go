// Package dlcmd is `watermark-connect dead-letter` (Command): inspect and
// redrive the kafka_watermark input's dead-letter topic, whose record
// format is internal/deadletter's. It connects as the input does, with
// status's connection flags and config loading (status.ConnFlags,
// status.Conn, status.Connect), and reads the topic with a direct consumer:
// no group, from each partition's log start (or the selected offset) to the
// end offsets taken when the command started, so that it ends while the
// input keeps writing.
//
// inspect summarises the topic per origin topic and partition (Summary);
// redrive checks the whole selection, then produces it back with an
// idempotent producer. Nothing is ever skipped silently: a record whose
// provenance does not parse is listed by inspect, and fails redrive when
// the provenance is needed to place it.
//
// Files: cli.go (the commands, flags and help), command.go (Inspect,
// Redrive, exit statuses), topic.go (which topic), scan.go (reading to the
// end), inspect.go (Summary and its text and JSON), redrive.go (Selection,
// checks, producing).
//
// # Concurrency
//
// Inspect and Redrive use the caller's goroutine and franz-go's own. A
// Summary is a value once returned, safe for concurrent reads.
package dlcmd
