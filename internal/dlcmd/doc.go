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
// redrive reads the selection twice: a check pass that places every record
// and keeps runs of offsets (a plan), then a produce pass that reads the
// records again and produces them back with an idempotent producer, a
// batch at a time, so that it never holds the selection in memory. Nothing
// is ever skipped silently: a record whose provenance does not parse is
// listed by inspect, and fails redrive when the provenance is needed to
// place it; a range partly below the log start, a record gone between the
// passes, a failure and a cut (--timeout, SIGINT, SIGTERM) are reported
// with the records they left.
//
// Files: cli.go (the commands, flags, signals and help), command.go
// (Inspect, Redrive, exit statuses), topic.go (which topic), scan.go
// (reading to the end, transaction markers included: internal/dlscan's,
// which status shares), inspect.go (Summary
// and its text and JSON), plan.go (the check pass), redrive.go (Selection,
// the produce pass and its tallies).
//
// # Concurrency
//
// Inspect and Redrive use the caller's goroutine and franz-go's own. A
// Summary is a value once returned, safe for concurrent reads.
package dlcmd
