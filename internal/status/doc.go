// Package status is `watermark-connect status` (Command): a consumer group's
// state as the brokers hold it, read from the group's committed offsets and
// the commit metadata the kafka_watermark input writes with them
// (internal/commitmeta), so that it needs neither the pipeline's metrics nor
// its logs, and works while the pipeline runs, after it stopped, and from any
// host that may read the group's offsets.
//
// Per partition it reports the committed offset (the watermark: the offset a
// consumer resumes from), the log end (the high watermark), the lag between
// them, the records above the committed offset that the metadata names as
// delivered (a restart skips them), and, for a stalled partition, the stall
// provenance: the failed batch at the head, since when, how many deliveries,
// its error class and the member that saw it. A partition is stalled when
// its latest commit says so; the input writes the provenance with every
// commit while the partition is stalled and drops it with the first commit
// after. Likewise it reports the records Kafka deleted (retention) or
// rewrote (an unclean leader election) before the input delivered them,
// while the input's commits carry that loss report (lost_records_report_for
// after the loss), and, seen by status itself, the records deleted from
// below the log start above the committed offset (GoneBelowStart), which
// the input reports only when it resumes there. The lag counts only the
// records that exist. A partition without a commit that no member is
// assigned is "not consumed" (members.go). And it reports the records the
// input dead-lettered lately (DEAD-LETTERED, "dead_lettered" in JSON): how
// many, within which offsets, since when, and the error class of the last
// failure. When the
// dead-letter write itself fails, the batch stays at the watermark and the
// stall's reason says so (e.g. "dead_letter_write: broker down"). Metadata
// is used only when it was written for the committed offset.
//
// The exit status is the answer for a readiness probe: 0 when no partition
// is stalled, none lost records and none waits unconsumed, 1 when one is
// stalled, 2 when it cannot tell, 4 when none is stalled but records wait in
// a partition not consumed, 3 when none of those but one lost records
// (ExitHealthy, ExitStalled, ExitUnknown, ExitNotConsumed, ExitLost;
// Report.ExitStatus says why in that order). 1, 2 and 4 mean unready; 3
// means data was lost but the partitions flow: ready, and worth an alert. Dead-lettering changes no exit status: it is by design, how a
// partition keeps flowing past records its output refuses.
//
// Files: command.go (the command, Run and its exit statuses), conn.go (the
// connection flags and Scrub, which `watermark-connect dead-letter` shares),
// config.go (reading a Benthos config's kafka_watermark input), envvars.go (Benthos's
// environment interpolation), client.go (the kgo client, which connects as
// the input does, with internal/kafkaconn), report.go (the Report and its
// Partitions), collect.go (Collect: what it asks the brokers), metadata.go
// (readMetadata: what a commit's metadata says), logstart.go (the loss seen
// below the log start), members.go (which partitions no member consumes),
// render.go (text and JSON), share.go (a share group's report, for
// --share-group: CollectShare, WriteShareText, WriteShareJSON),
// share_deadletters.go (a share group's dead letters, read from its
// dead-letter topic: CollectShareDeadLetters), safe.go (escaping what a
// terminal acts on, and RFC 3339 times, for every command's output).
//
// A share group commits no offsets, so its dead-letter report cannot ride
// on commits: status reads the dead-letter topic itself, bounded, and
// counts the records that carry the group in dead_letter_share_group and
// were written within the kafka_share input's dead_letter.report_for.
//
// # Concurrency
//
// Run and Collect use one goroutine, the caller's, and franz-go's own. A
// Report is a value once returned, safe for concurrent reads.
package status
